package workload

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// seededSchedule builds n random requests with Poisson arrivals at rate.
func seededSchedule(t testing.TB, n int, seed int64, rate float64) []Request {
	t.Helper()
	s := DefaultSpec()
	s.NumPrompts, s.Seed = n, seed
	s.Random.InputLen, s.Random.OutputLen, s.Random.RangeRatio = 16, 8, 0.5
	reqs, err := Build(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	offsets, err := Schedule(len(reqs), Arrivals{Rate: rate, Burstiness: 1, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	Assign(reqs, offsets)
	return reqs
}

// checkPartition asserts that the shards of reqs are disjoint, in schedule
// order, and that their union is reqs exactly (prompts and arrivals).
func checkPartition(t *testing.T, reqs []Request, count int) {
	t.Helper()
	owner := make([]int, len(reqs))
	for i := range owner {
		owner[i] = -1
	}
	var union []Request
	for i := range count {
		sh := Shard{Index: i, Count: count}
		part := sh.Select(reqs)
		if want := len(reqs) / count; len(part) < want || len(part) > want+1 {
			t.Errorf("shard %s: %d requests, want %d or %d", sh, len(part), want, want+1)
		}
		for j, r := range part {
			if owner[r.Index] != -1 {
				t.Fatalf("request %d in shards %d and %d", r.Index, owner[r.Index], i)
			}
			owner[r.Index] = i
			if j > 0 && r.Arrival < part[j-1].Arrival {
				t.Fatalf("shard %s: request %d arrives before the one before it", sh, r.Index)
			}
		}
		union = append(union, part...)
	}
	slices.SortFunc(union, func(a, b Request) int { return a.Index - b.Index })
	if diff := cmp.Diff(reqs, union); diff != "" {
		t.Fatalf("union of %d shards differs from the schedule (-want +got):\n%s", count, diff)
	}
}

func TestShardPartitionUnionDisjointOrdered(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		count int
		rate  float64
		seed  int64
	}{
		{name: "one shard is the whole run", n: 50, count: 1, rate: 10, seed: 1},
		{name: "even split", n: 200, count: 4, rate: 2000, seed: 2},
		{name: "uneven split", n: 203, count: 4, rate: 100, seed: 3},
		{name: "more shards than requests", n: 3, count: 8, rate: 5, seed: 4},
		{name: "burst at infinite rate", n: 64, count: 16, rate: math.Inf(1), seed: 5},
		{name: "prime count", n: 1000, count: 7, rate: 300, seed: 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkPartition(t, seededSchedule(t, tc.n, tc.seed, tc.rate), tc.count)
		})
	}
}

func TestShardScheduleIsDeterministic(t *testing.T) {
	a := seededSchedule(t, 300, 42, 50)
	b := seededSchedule(t, 300, 42, 50)
	if ScheduleHash(a) != ScheduleHash(b) {
		t.Fatal("same seed, different schedule hashes")
	}
	for i := range 3 {
		sh := Shard{Index: i, Count: 3}
		if diff := cmp.Diff(sh.Select(a), sh.Select(b)); diff != "" {
			t.Fatalf("shard %s differs between two builds with one seed:\n%s", sh, diff)
		}
	}
}

// TestShardRateIsSplit checks each shard's achieved rate is rate/N: its
// last arrival is the schedule's end and it holds n/N requests.
func TestShardRateIsSplit(t *testing.T) {
	const n, count, rate = 4000, 4, 2000.0
	reqs := seededSchedule(t, n, 9, rate)
	for i := range count {
		part := Shard{Index: i, Count: count}.Select(reqs)
		span := part[len(part)-1].Arrival.Seconds()
		got := float64(len(part)) / span
		if math.Abs(got-rate/count)/(rate/count) > 0.01 {
			t.Errorf("shard %d: %.1f req/s, want %.1f within 1%%", i, got, rate/count)
		}
	}
}

func TestScheduleHashSeesEveryField(t *testing.T) {
	base := seededSchedule(t, 20, 7, 10)
	want := ScheduleHash(base)
	changes := map[string]func(r *Request){
		"prompt text":  func(r *Request) { r.Prompt += "x" },
		"prompt IDs":   func(r *Request) { r.PromptIDs[0]++ },
		"prompt len":   func(r *Request) { r.PromptLen++ },
		"max tokens":   func(r *Request) { r.MaxTokens++ },
		"arrival":      func(r *Request) { r.Arrival += time.Nanosecond },
		"global index": func(r *Request) { r.Index += 100 },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			reqs := slices.Clone(base)
			reqs[5].PromptIDs = slices.Clone(reqs[5].PromptIDs)
			change(&reqs[5])
			if ScheduleHash(reqs) == want {
				t.Fatalf("changing the %s of one request kept the hash", name)
			}
		})
	}
	if ScheduleHash(base[:19]) == want {
		t.Fatal("dropping the last request kept the hash")
	}
}

func TestParseShard(t *testing.T) {
	tests := []struct {
		in      string
		want    Shard
		wantErr string
	}{
		{in: "0/4", want: Shard{0, 4}},
		{in: "3/4", want: Shard{3, 4}},
		{in: " 1 / 2 ", want: Shard{1, 2}},
		{in: "0/1", want: Shard{0, 1}},
		{in: "4/4", wantErr: "must be from 0 to 3"},
		{in: "-1/4", wantErr: "must be from 0 to 3"},
		{in: "0/0", wantErr: "at least 1"},
		{in: "1", wantErr: "expected INDEX/COUNT"},
		{in: "a/b", wantErr: "expected INDEX/COUNT"},
		{in: "", wantErr: "expected INDEX/COUNT"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseShard("--shard", tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "--shard ") {
					t.Fatalf("ParseShard(%q) error %v, want one naming --shard and containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseShard(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

// FuzzShardPartition checks the partition properties for any request
// count, shard count and seed.
func FuzzShardPartition(f *testing.F) {
	f.Add(uint16(100), uint8(4), int64(0))
	f.Add(uint16(1), uint8(1), int64(-3))
	f.Add(uint16(7), uint8(13), int64(99))
	f.Fuzz(func(t *testing.T, n uint16, count uint8, seed int64) {
		if n == 0 || count == 0 || n > 2000 {
			t.Skip()
		}
		reqs := seededSchedule(t, int(n), seed, 100)
		checkPartition(t, reqs, int(count))
	})
}
