package engine

import (
	"fmt"
	"testing"
	"time"
)

// TestOmitRunTokens runs every configuration of the property matrix twice
// in lockstep, once with Config.OmitRunTokens, and checks the second
// engine's outputs against the first's: exactly the outputs of tokens that
// continue a run (a token in the previous Complete too, not finished) are
// left out, and every other one carries the gap to the request's previous
// token, rejections included; the engines' counters agree.
func TestOmitRunTokens(t *testing.T) {
	var omitted, gaps int
	for _, cfg := range configMatrix() {
		t.Run(configName(cfg), func(t *testing.T) {
			for seed := range uint64(3) {
				o, g := runOmitPair(t, cfg, randomPlan(seed, cfg, 60))
				omitted += o
				gaps += g
			}
		})
	}
	t.Logf("outputs left out %d, outputs after a broken run %d", omitted, gaps)
	if omitted == 0 || gaps == 0 {
		t.Fatal("the workloads never continue or never break a run")
	}
}

func runOmitPair(t *testing.T, cfg Config, plan []plannedRequest) (omitted, gaps int) {
	t.Helper()
	full, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OmitRunTokens = true
	thin, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lastToken := map[uint64]int64{} // from full's outputs
	gapOf := func(id uint64, step int64) int32 {
		if l, ok := lastToken[id]; ok {
			return int32(step - l)
		}
		return 0
	}
	now, next := time.Duration(0), 0
	var step int64
	for range 100000 {
		for next < len(plan) && plan[next].Arrival <= now {
			errFull, errThin := full.Add(plan[next].Request), thin.Add(plan[next].Request)
			if (errFull == nil) != (errThin == nil) {
				t.Fatalf("request %d: Add gave %v and %v", plan[next].ID, errFull, errThin)
			}
			next++
		}
		a, b := full.Schedule(now), thin.Schedule(now)
		if len(a.Rejected) != len(b.Rejected) {
			t.Fatalf("step %d: %d and %d rejected", step, len(a.Rejected), len(b.Rejected))
		}
		for i, r := range a.Rejected {
			want := r
			want.TokenGap = gapOf(r.ID, step)
			if got := b.Rejected[i]; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("step %d: rejected %+v, want %+v", step, got, want)
			}
		}
		if a.Empty() != b.Empty() {
			t.Fatalf("step %d: the engines diverged", step)
		}
		if a.Empty() {
			if next == len(plan) {
				if full.Stats() != thin.Stats() {
					t.Fatalf("stats %+v, want %+v", thin.Stats(), full.Stats())
				}
				return omitted, gaps
			}
			now = max(now, plan[next].Arrival)
			continue
		}
		now += testModel.StepTime(a.Shape)
		step++
		outsFull, outsThin := full.Complete(a), thin.Complete(b)
		var want []Output
		stepOmitted := 0
		for _, o := range outsFull {
			if o.NewTokens == 0 {
				want = append(want, o)
				continue
			}
			prev, had := lastToken[o.ID]
			lastToken[o.ID] = step
			if had && prev == step-1 && !o.Finished {
				omitted++
				stepOmitted++
				continue
			}
			if had {
				o.TokenGap = int32(step - prev)
				if o.TokenGap > 1 {
					gaps++
				}
			}
			want = append(want, o)
		}
		if fmt.Sprint(outsThin) != fmt.Sprint(want) {
			t.Fatalf("step %d: outputs\n%+v\nwant\n%+v", step, outsThin, want)
		}
		if got, none := thin.OmittedTokens(), full.OmittedTokens(); got != stepOmitted || none != 0 {
			t.Fatalf("step %d: OmittedTokens %d (%d without omission), want %d (0)", step, got, none, stepOmitted)
		}
	}
	t.Fatal("the run did not finish")
	return omitted, gaps
}
