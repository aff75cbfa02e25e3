package workload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/tokenizer"
)

// TestNewStreamMatchesBuildAndSchedule: the streamed workload is, request
// by request and ID by ID, Build's requests with Schedule's arrivals in
// stable arrival order, for every arrival process.
func TestNewStreamMatchesBuildAndSchedule(t *testing.T) {
	smallVocab := randomSpec(40, 1, 4, 0, 20)
	smallVocab.VocabSize = 7
	cases := []struct {
		name string
		spec Spec
		arr  Arrivals
	}{
		{"burst", randomSpec(300, 64, 16, 0, 0), Arrivals{Rate: math.Inf(1), Burstiness: 1, Seed: 3}},
		{"poisson, range and prefix", randomSpec(500, 200, 200, 0.5, 37), Arrivals{Rate: 50, Burstiness: 1, Seed: 3}},
		{"bursty gamma", randomSpec(400, 30, 30, 0.2, 0), Arrivals{Rate: 7, Burstiness: 0.3, Seed: 11}},
		{"constant gaps", randomSpec(333, 10, 10, 0, 0), Arrivals{Rate: 3, Burstiness: math.Inf(1), Seed: 1}},
		{"linear ramp", randomSpec(200, 10, 10, 0.1, 0), Arrivals{Rate: math.Inf(1), Burstiness: 1, RampUp: RampLinear, RampStart: 1, RampEnd: 40, Seed: 2}},
		{"exponential ramp", randomSpec(200, 10, 10, 0.1, 0), Arrivals{Rate: math.Inf(1), Burstiness: 2, RampUp: RampExponential, RampStart: 1, RampEnd: 40, Seed: 2}},
		{"one request", randomSpec(1, 10, 10, 0, 0), Arrivals{Rate: 2, Burstiness: 1}},
		{"small vocabulary", smallVocab, Arrivals{Rate: 5, Burstiness: 1, Seed: 9}},
		{"last sorts early", randomSpec(3, 10, 10, 0, 0), lastSortsEarly},
		{"lengths from a run, with a prefix", lengthsSpec(6, lengthsSmall, 5), Arrivals{Rate: 3, Burstiness: 1, Seed: 4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			want, err := Build(ctx, tc.spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			offsets, err := Schedule(len(want), tc.arr)
			if err != nil {
				t.Fatal(err)
			}
			Assign(want, offsets)
			wantStream := StreamOf(want)
			got, err := NewStream(ctx, tc.spec, tc.arr, true)
			if err != nil {
				t.Fatal(err)
			}
			if got.Len() != len(want) {
				t.Fatalf("Len %d, want %d", got.Len(), len(want))
			}
			for k := 0; ; k++ {
				w, g := wantStream.Next(), got.Next()
				if w == nil || g == nil {
					if w != g {
						t.Fatalf("position %d: one stream ended early (want %v, got %v)", k, w, g)
					}
					break
				}
				gotReq := *g
				gotReq.PromptIDs = nil
				if gotReq.Index != w.Index || gotReq.PromptLen != w.PromptLen || gotReq.MaxTokens != w.MaxTokens || gotReq.Arrival != w.Arrival {
					t.Fatalf("position %d: got %+v, want %+v", k, gotReq, *w)
				}
				if a, b := g.PromptIDs, w.PromptIDs; !slices.Equal(a, b) {
					t.Fatalf("position %d (request %d): prompt IDs differ:\n got %v\nwant %v", k, w.Index, a, b)
				}
				// Give back every other prompt, garbled, at once: later
				// prompts are built in old buffers and must still match.
				if k%2 == 0 {
					for j := range g.PromptIDs {
						g.PromptIDs[j] = -1
					}
					got.Recycle(g.PromptIDs)
				}
			}
		})
	}
}

// lastSortsEarly is an arrival process whose pinned last offset (1 s)
// sorts before the middle request's: gamma gaps of shape 0.001 underflow,
// so the rescale saturates (offsets -max, +max, 1 s). The stream must
// make the middle request before the last and hold it.
var lastSortsEarly = Arrivals{Rate: 2.9999999985, Burstiness: 0.001, Seed: 54}

// TestNewTokenizedStreamMatchesBuildAndSchedule: with a tokenizer, and for
// the text datasets, the stream is Build's requests (random text prompts
// converged through the tokenizer, whose padding draws follow the
// dataset's passes; sonnet's redraws; sharegpt's and custom's
// oversampling) with Schedule's arrivals, and with promptIDs each carries
// its prompt's encoding, as the CLI sets it for prefix caching.
func TestNewTokenizedStreamMatchesBuildAndSchedule(t *testing.T) {
	greedy := newGreedyTokenizer()
	bos := newGreedyTokenizer()
	bos.numSpecial = 1
	cases := []struct {
		name string
		spec Spec
		arr  Arrivals
		tok  tokenizer.Tokenizer
	}{
		{"poisson, range and prefix", randomSpec(120, 40, 20, 0.5, 9), Arrivals{Rate: 50, Burstiness: 1, Seed: 3}, greedy},
		{"burst with a BOS token", randomSpec(80, 30, 10, 0.2, 0), Arrivals{Rate: math.Inf(1), Burstiness: 1, Seed: 1}, countingSpecialTokenizer{bos}},
		{"last sorts early", randomSpec(3, 25, 10, 0.3, 4), lastSortsEarly, greedy},
		{"lengths from a run", lengthsFromSpec(6, smallLengthsFile), Arrivals{Rate: 6, Burstiness: 1, Seed: 8}, greedy},
		{"sonnet", sonnetSpec("testdata/poem.txt", 50, 200, 9, 80), Arrivals{Rate: 9, Burstiness: 1, Seed: 4}, greedy},
		{"sonnet, estimated lengths, last sorts early", sonnetSpec("testdata/poem.txt", 3, 120, 9, 40), lastSortsEarly, nil},
		{"sharegpt, oversampled", shareGPTSpec(70), Arrivals{Rate: 20, Burstiness: 0.5, Seed: 6}, greedy},
		{"sharegpt, not oversampled", noOversample(shareGPTSpec(70)), Arrivals{Rate: 20, Burstiness: 1, Seed: 6}, greedy},
		{"custom, last sorts early", customSpec("testdata/custom_small.jsonl", 3), lastSortsEarly, greedy},
		{"custom, estimated lengths", customSpec("testdata/custom_small.jsonl", 30), Arrivals{Rate: math.Inf(1), Burstiness: 1}, nil},
	}
	for _, tc := range cases {
		for _, promptIDs := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/ids=%v", tc.name, promptIDs), func(t *testing.T) {
				ctx := context.Background()
				want := scheduled(t, tc.spec, tc.tok, tc.arr)
				got, err := NewTokenizedStream(ctx, tc.spec, tc.arr, tc.tok, promptIDs)
				if err != nil {
					t.Fatal(err)
				}
				wantStream, k := StreamOf(want), 0
				for w := wantStream.Next(); w != nil; w = wantStream.Next() {
					g := got.Next()
					if g == nil {
						t.Fatalf("position %d: the stream ended early (%v)", k, got.Err())
					}
					gotReq := *g
					gotReq.PromptIDs = nil
					if !reflect.DeepEqual(gotReq, *w) {
						t.Fatalf("position %d: got %+v, want %+v", k, gotReq, *w)
					}
					var wantIDs []int32
					if promptIDs && tc.tok != nil {
						ids, _ := tc.tok.Encode(ctx, w.Prompt)
						for _, id := range ids {
							wantIDs = append(wantIDs, int32(id))
						}
					}
					if !slices.Equal(g.PromptIDs, wantIDs) {
						t.Fatalf("position %d: prompt IDs %v, want %v", k, g.PromptIDs, wantIDs)
					}
					// Garbled when given back: a later prompt built in the
					// buffer, or a copy of the same entry, must not see it.
					for j := range g.PromptIDs {
						g.PromptIDs[j] = -1
					}
					got.Recycle(g.PromptIDs)
					k++
				}
				if g := got.Next(); g != nil || got.Err() != nil {
					t.Fatalf("after %d requests: got %+v more, error %v", k, g, got.Err())
				}
			})
		}
	}
}

// TestStreamScheduleHash: a stream's hash is ScheduleHash of the requests
// Build, Schedule and the CLI's prompt encoding give (token-ID prompts
// always with their IDs), whether the stream hands the IDs out, defers
// them or leaves them out, and whether the consumer took every request.
func TestStreamScheduleHash(t *testing.T) {
	ctx := context.Background()
	tok := newGreedyTokenizer()
	arr := Arrivals{Rate: 20, Burstiness: 1, Seed: 5}
	cases := []struct {
		name      string
		spec      Spec
		tok       tokenizer.Tokenizer
		promptIDs bool
		defer_    bool
		take      int
	}{
		{"ids", randomSpec(200, 50, 20, 0.5, 7), nil, true, false, 200},
		{"no ids", randomSpec(200, 50, 20, 0.5, 7), nil, false, false, 200},
		{"deferred ids, half taken", randomSpec(200, 50, 20, 0.5, 7), nil, true, true, 100},
		{"none taken", randomSpec(200, 50, 20, 0.5, 7), nil, false, false, 0},
		{"tokenizer with ids", randomSpec(60, 30, 10, 0.3, 5), tok, true, false, 60},
		{"tokenizer without ids, a third taken", randomSpec(60, 30, 10, 0.3, 5), tok, false, false, 20},
		{"sharegpt oversampled with ids, some taken", shareGPTSpec(40), tok, true, false, 13},
		{"sonnet estimated", sonnetSpec("testdata/poem.txt", 30, 120, 9, 40), nil, true, false, 30},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := scheduled(t, tc.spec, tc.tok, arr)
			if tc.tok != nil && tc.promptIDs {
				for i := range want {
					ids, _ := tc.tok.Encode(ctx, want[i].Prompt)
					for _, id := range ids {
						want[i].PromptIDs = append(want[i].PromptIDs, int32(id))
					}
				}
			}
			st, err := NewTokenizedStream(ctx, tc.spec, arr, tc.tok, tc.promptIDs)
			if err != nil {
				t.Fatal(err)
			}
			if tc.defer_ && !st.DeferPrompts() {
				t.Fatal("a generated stream refused to defer its prompts")
			}
			st.HashSchedule()
			for range tc.take {
				st.Recycle(st.Next().PromptIDs)
			}
			got, err := st.ScheduleHash()
			if err != nil {
				t.Fatal(err)
			}
			if w := ScheduleHash(want); got != w {
				t.Fatalf("stream hash %s, want %s", got, w)
			}
			if of, w := StreamOf(want), ScheduleHash(want); mustHash(t, of) != w {
				t.Fatal("StreamOf's hash differs from its requests'")
			}
		})
	}
	unasked, err := NewStream(ctx, randomSpec(5, 10, 10, 0, 0), arr, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unasked.ScheduleHash(); err == nil {
		t.Fatal("a stream not asked to hash its schedule gave a hash")
	}
}

// scheduled is Build's requests for spec with Schedule's arrivals for a.
func scheduled(t *testing.T, spec Spec, tok tokenizer.Tokenizer, a Arrivals) []Request {
	t.Helper()
	reqs, err := Build(context.Background(), spec, tok)
	if err != nil {
		t.Fatal(err)
	}
	offsets, err := Schedule(len(reqs), a)
	if err != nil {
		t.Fatal(err)
	}
	Assign(reqs, offsets)
	return reqs
}

func noOversample(s Spec) Spec {
	s.ShareGPT.NoOversample, s.Custom.NoOversample = true, true
	return s
}

func mustHash(t *testing.T, s *Stream) string {
	t.Helper()
	h, err := s.ScheduleHash()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestNewTokenizedStreamFailure: a tokenizer failing mid-stream ends the
// stream there, and Err says why.
func TestNewTokenizedStreamFailure(t *testing.T) {
	tok := &brokenLaterTokenizer{greedyTokenizer: newGreedyTokenizer(), after: 5}
	st, err := NewTokenizedStream(context.Background(), randomSpec(20, 10, 10, 0, 0), Arrivals{Rate: 5, Burstiness: 1, Seed: 2}, tok, false)
	if err != nil {
		t.Fatal(err)
	}
	taken := 0
	for st.Next() != nil {
		taken++
	}
	if taken == 0 || taken >= 20 || st.Err() == nil || !strings.Contains(st.Err().Error(), "encode broke") {
		t.Fatalf("took %d of 20 requests, error %v; want the stream to stop at the failure and say why", taken, st.Err())
	}
}

// brokenLaterTokenizer fails every Encode after the first few.
type brokenLaterTokenizer struct {
	*greedyTokenizer
	after int
}

func (t *brokenLaterTokenizer) Encode(ctx context.Context, text string) ([]int, error) {
	if t.after--; t.after < 0 {
		return nil, errors.New("encode broke")
	}
	return t.greedyTokenizer.Encode(ctx, text)
}

func TestShardSize(t *testing.T) {
	reqs := make([]Request, 0, 11)
	for total := range 12 {
		for count := 1; count <= 5; count++ {
			for index := range count {
				sh := Shard{Index: index, Count: count}
				if got, want := sh.Size(total), len(sh.Select(reqs[:total])); got != want {
					t.Errorf("shard %s of %d requests: Size %d, Select %d", sh, total, got, want)
				}
			}
		}
		reqs = append(reqs, Request{Index: total})
	}
}

// TestLazyArrivalsLastOutOfOrder: when rounding puts the pinned last
// offset below the ones before it, the stream takes it where a stable
// sort would.
func TestLazyArrivalsLastOutOfOrder(t *testing.T) {
	arr := &lazyArrivals{n: 4, last: 5}
	arr.hasPending, arr.pending = true, 6
	if !arr.lastSortsBefore(1) {
		t.Error("last offset 5 before a pending 6: should sort first")
	}
	arr.pending = 5
	if arr.lastSortsBefore(1) {
		t.Error("equal offsets keep index order")
	}
	if arr.lastSortsBefore(3) {
		t.Error("index n-1 is the last itself")
	}
}

func TestNewStreamRejectsBuiltDatasets(t *testing.T) {
	s := randomSpec(10, 10, 10, 0, 0)
	s.Dataset = DatasetSonnet
	if _, err := NewStream(context.Background(), s, DefaultArrivals(), false); err == nil {
		t.Fatal("sonnet streamed; want an error")
	}
}

// TestStreamRecycleReusesBuffers: a prompt given back is the buffer of a
// later prompt (so steady state allocates none), and StreamOf never reuses
// the caller's IDs.
func TestStreamRecycleReusesBuffers(t *testing.T) {
	ctx := context.Background()
	spec := randomSpec(50, 100, 10, 0.3, 8)
	s, err := NewStream(ctx, spec, Arrivals{Rate: 5, Burstiness: 1, Seed: 4}, true)
	if err != nil {
		t.Fatal(err)
	}
	reused := 0
	var prev []int32
	for r := s.Next(); r != nil; r = s.Next() {
		if prev != nil && cap(prev) >= len(r.PromptIDs) && &prev[:1][0] == &r.PromptIDs[0] {
			reused++
		}
		s.Recycle(r.PromptIDs)
		prev = r.PromptIDs
	}
	// Lengths 78..138 span two or three size classes of 32 tokens.
	if reused < 15 {
		t.Fatalf("%d of 50 prompts reused the buffer given back just before; want most", reused)
	}

	reqs := []Request{{PromptIDs: []int32{1, 2, 3}, PromptLen: 3}, {PromptIDs: []int32{4, 5, 6}, PromptLen: 3, Arrival: 1}}
	own := StreamOf(reqs)
	own.Recycle(own.Next().PromptIDs)
	if r := own.Next(); !slices.Equal(r.PromptIDs, []int32{4, 5, 6}) || &r.PromptIDs[0] != &reqs[1].PromptIDs[0] {
		t.Fatalf("StreamOf gave %v, want the caller's own IDs", r.PromptIDs)
	}
}

// A simulated day of traffic takes ten million requests from one stream:
// any allocation per request is garbage the collector must keep pace with,
// and the heap's headroom then grows with the run (it once did: a
// request escaped to the heap because the schedule hash took its address).
func TestStreamAllocatesNothingPerRequest(t *testing.T) {
	for _, promptIDs := range []bool{false, true} {
		t.Run(fmt.Sprintf("prompt IDs %v", promptIDs), func(t *testing.T) {
			st, err := NewStream(context.Background(), randomSpec(5000, 200, 200, 0.5, 0), Arrivals{Rate: 50, Burstiness: 1, Seed: 1}, promptIDs)
			if err != nil {
				t.Fatal(err)
			}
			take := func() {
				r := st.Next()
				if r == nil {
					t.Fatal("stream ended early")
				}
				st.Recycle(r.PromptIDs)
			}
			for range 100 { // the prompt buffers' pool fills
				take()
			}
			if allocs := testing.AllocsPerRun(1000, take); allocs != 0 {
				t.Errorf("%.2f allocations per request, want 0", allocs)
			}
		})
	}
}
