package workload

import (
	"context"
	"math"
	"slices"
	"testing"
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
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			want, wantIDs, err := BuildCompact(ctx, tc.spec, nil)
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
				if a, b := g.PromptIDs, wantIDs(w); !slices.Equal(a, b) {
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
