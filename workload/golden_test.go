package workload

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/golden"
)

// checkGolden compares got with testdata/golden/name.golden. The golden files
// pin the exact streams: a change there breaks the promise that a seed gives
// the same workload across servebench versions, so it must be deliberate.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.CheckFile(t, filepath.Join("testdata", "golden", name+".golden"), got)
}

func renderRequests(reqs []Request) []byte {
	var b bytes.Buffer
	for _, r := range reqs {
		h := fnv.New64a()
		var head string
		if r.PromptIDs != nil {
			for _, id := range r.PromptIDs {
				fmt.Fprintf(h, "%d,", id)
			}
			head = fmt.Sprint(r.PromptIDs[:min(6, len(r.PromptIDs))])
		} else {
			h.Write([]byte(r.Prompt))
			head = fmt.Sprintf("%q", r.Prompt[:min(24, len(r.Prompt))])
		}
		fmt.Fprintf(&b, "%d in=%d out=%d est=%v hash=%016x %s\n", r.Index, r.PromptLen, r.MaxTokens, r.PromptLenEstimated, h.Sum64(), head)
	}
	return b.Bytes()
}

func TestGoldenWorkloads(t *testing.T) {
	tok := newGreedyTokenizer()
	prefixRep := DefaultSpec()
	prefixRep.Dataset = DatasetPrefixRepetition
	prefixRep.NumPrompts = 6
	prefixRep.PrefixRepetition = PrefixRepetitionOptions{PrefixLen: 4, SuffixLen: 4, NumPrefixes: 3, OutputLen: 5}
	tests := []struct {
		name    string
		spec    Spec
		withTok bool
	}{
		{"random-ids", randomSpec(6, 16, 8, 0.5, 4), false},
		{"random-text", randomSpec(6, 16, 8, 0.5, 4), true},
		{"prefix-repetition-ids", prefixRep, false},
		{"prefix-repetition-text", prefixRep, true},
		{"sharegpt", shareGPTSpec(10), true},
		{"custom", customSpec("testdata/custom_small.jsonl", 7), false},
		{"sonnet", sonnetSpec("testdata/poem.txt", 4, 200, 9, 80), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reqs []Request
			var err error
			if tt.withTok {
				reqs, err = Build(context.Background(), tt.spec, tok)
			} else {
				reqs, err = Build(context.Background(), tt.spec, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "workload-"+tt.name, renderRequests(reqs))
		})
	}
}

func TestGoldenSchedules(t *testing.T) {
	tests := []struct {
		name string
		a    Arrivals
	}{
		{"poisson", Arrivals{Rate: 10, Burstiness: 1}},
		{"gamma-0.5", Arrivals{Rate: 10, Burstiness: 0.5, Seed: 9}},
		{"gamma-4", Arrivals{Rate: 10, Burstiness: 4, Seed: 9}},
		{"ramp-linear-poisson", Arrivals{Rate: inf, Burstiness: 1, RampUp: RampLinear, RampStart: 2, RampEnd: 20}},
		{"ramp-exponential-poisson", Arrivals{Rate: inf, Burstiness: 1, RampUp: RampExponential, RampStart: 2, RampEnd: 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			for i, d := range mustSchedule(t, 12, tt.a) {
				fmt.Fprintf(&b, "%d %d %s\n", i, d.Nanoseconds(), d.Round(time.Microsecond))
			}
			checkGolden(t, "schedule-"+tt.name, b.Bytes())
		})
	}
}
