package bench

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servebench/servebench/metrics"
)

// TestStartAtSharesTheTimeline checks that --start-at delays the first
// send to the given wall-clock instant, that offsets count from it, and
// that a shard reaching it late reports how late and shows the lateness
// as send lag of its overdue requests rather than shifting its schedule.
func TestStartAtSharesTheTimeline(t *testing.T) {
	tests := []struct {
		name      string
		startIn   time.Duration // StartAt relative to the call of Run
		wantLate  time.Duration
		wantLags  []time.Duration // per request, in index order
		wantFirst time.Duration   // first request's Dispatched
	}{
		{name: "on time", startIn: 2 * time.Second, wantLate: 0,
			wantLags: []time.Duration{0, 0, 0, 0}, wantFirst: 0},
		{name: "late by 250ms", startIn: -250 * time.Millisecond, wantLate: 250 * time.Millisecond,
			// Arrivals 0, 100, 200 ms are overdue at 250 ms; 300 ms is not.
			wantLags: []time.Duration{250 * time.Millisecond, 150 * time.Millisecond, 50 * time.Millisecond, 0}, wantFirst: 250 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &fakeServer{ttft: 10 * time.Millisecond, itl: time.Millisecond}
				startAt := time.Now().Add(tc.startIn).Round(0)
				called := time.Now()
				res, err := Run(t.Context(), Config{coarseTimers: true, Client: srv, Requests: requests(4, 100*time.Millisecond), StartAt: startAt, KeepRecords: true})
				if err != nil {
					t.Fatal(err)
				}
				if !res.Started.Round(0).Equal(startAt) {
					t.Errorf("run zero %v, want the start-at instant %v", res.Started.Round(0), startAt)
				}
				if res.StartLate != tc.wantLate {
					t.Errorf("start late %v, want %v", res.StartLate, tc.wantLate)
				}
				recs := slices.Clone(res.Records)
				slices.SortFunc(recs, func(a, b metrics.Record) int { return a.Index - b.Index })
				for i, r := range recs {
					if r.SendLag() != tc.wantLags[i] {
						t.Errorf("request %d: send lag %v, want %v", i, r.SendLag(), tc.wantLags[i])
					}
				}
				if recs[0].Dispatched != tc.wantFirst {
					t.Errorf("first dispatch at %v, want %v", recs[0].Dispatched, tc.wantFirst)
				}
				if tc.startIn > 0 && time.Since(called) < tc.startIn {
					t.Errorf("run returned %v after the call, before the start-at instant", time.Since(called))
				}
			})
		})
	}
}

func TestStartAtInterruptedBeforeStartSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeServer{ttft: 10 * time.Millisecond, itl: time.Millisecond}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		res, err := Run(ctx, Config{coarseTimers: true, Client: srv, Requests: requests(3, time.Millisecond), StartAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Interrupted || res.NotSent != 3 || srv.calls.Load() != 0 {
			t.Fatalf("interrupted %v, not sent %d, server calls %d; want true, 3, 0", res.Interrupted, res.NotSent, srv.calls.Load())
		}
	})
}
