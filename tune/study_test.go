package tune

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/servebench/servebench/sweep"
)

func TestStudyOnSimRecordsInvalidPointsWithVLLMsReason(t *testing.T) {
	target := newSimTarget(t, 60)
	// Block size 64 does not exist in V0 and chunked prefill off with a
	// budget below max_model_len is vLLM's classic startup error: with no
	// condition to repair it, both must be rejected, never run.
	space := &Space{Params: []Param{
		{Name: "max_num_seqs", Kind: KindInt, Low: 8, High: 128, Log: true},
		{Name: "max_num_batched_tokens", Kind: KindInt, Low: 512, High: 8192, Log: true},
		{Name: "block_size", Kind: KindChoice, Choices: []string{"16", "64"}},
		{Name: "enable_chunked_prefill", Kind: KindBool},
	}}
	store := openTestStorage(t)
	ran := 0
	sla, err := sweep.ParseSLA("p99_tpot_ms<=60")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Study: "s", Space: space, Storage: store, Sampler: SamplerTPE, Seed: 1, Trials: 16,
		Objective: Objective{Key: "request_throughput", SLA: sla},
		Validate:  target.Validate,
		Run: func(ctx context.Context, tr Trial) (*Outcome, error) {
			ran++
			return target.Run(ctx, tr)
		},
	}
	if err := Optimize(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	trials, err := store.Trials(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(trials) != 16 {
		t.Fatalf("%d trials stored, want 16", len(trials))
	}
	counts := map[State]int{}
	reasons := map[string]bool{}
	for i, tr := range trials {
		if tr.Number != i {
			t.Errorf("trial %d has number %d", i, tr.Number)
		}
		counts[tr.State]++
		if tr.State == StateInvalid {
			reasons[reasonKind(tr.Reason)] = true
			if tr.Result != nil {
				t.Errorf("invalid trial %d has a result: it was run", tr.Number)
			}
		}
		if tr.State == StateComplete && (tr.Objective == nil || tr.SLOMet == nil || tr.Predicted == nil || tr.Predicted.GPUBlocks == 0) {
			t.Errorf("complete trial %d lacks objective, SLO verdict or prediction: %+v", tr.Number, tr)
		}
	}
	if ran != counts[StateComplete]+counts[StateFailed] {
		t.Errorf("runner called %d times for %d run trials", ran, counts[StateComplete]+counts[StateFailed])
	}
	if counts[StateInvalid] == 0 || counts[StateComplete] == 0 {
		t.Fatalf("want both invalid and complete trials, got %v", counts)
	}
	for kind := range reasons {
		if kind == "" {
			t.Errorf("an invalid trial's reason is not one of vLLM's texts")
		}
	}
}

func reasonKind(reason string) string {
	switch {
	case strings.Contains(reason, "argument --block-size: invalid choice: 64 (choose from 8, 16, 32)"):
		return "block"
	case strings.Contains(reason, "is smaller than max_model_len (4096)"):
		return "mnbt"
	case strings.Contains(reason, "must be greater than or equal to max_num_seqs"):
		return "seqs"
	}
	return ""
}

func TestConditionRepairsChunkedPrefillOffBudget(t *testing.T) {
	target := newSimTarget(t, 40)
	space := &Space{Params: []Param{
		{Name: "max_num_seqs", Kind: KindInt, Low: 8, High: 64},
		{Name: "max_num_batched_tokens", Kind: KindInt, Low: 512, High: 8192, Log: true},
		{Name: "enable_chunked_prefill", Kind: KindBool},
	}, Conditions: []Condition{{If: "enable_chunked_prefill == false", Then: "max_num_batched_tokens >= max_model_len"}}}
	store := openTestStorage(t)
	cfg := Config{Study: "s", Space: space, Storage: store, Sampler: SamplerRandom, Seed: 3, Trials: 12,
		Known: map[string]string{"max_model_len": "4096"}, Validate: target.Validate, Run: target.Run}
	if err := Optimize(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	trials, _ := store.Trials(context.Background(), "s")
	repaired := 0
	for _, tr := range trials {
		if tr.State != StateComplete {
			t.Errorf("trial %d %s: %s", tr.Number, tr.State, tr.Reason)
		}
		if len(tr.Repaired) > 0 {
			repaired++
			if tr.Params["max_num_batched_tokens"] != "4096" || tr.Params["enable_chunked_prefill"] != "false" {
				t.Errorf("repaired trial %d: %v", tr.Number, tr.Params)
			}
		}
	}
	if repaired == 0 {
		t.Error("no trial needed the condition: the test proves nothing with this seed")
	}
}

func TestFailedTrialIsRecordedAndPenalised(t *testing.T) {
	space := &Space{Params: []Param{{Name: "max_num_seqs", Kind: KindInt, Low: 1, High: 10}}}
	store := openTestStorage(t)
	cfg := Config{Study: "s", Space: space, Storage: store, Trials: 4, Sampler: SamplerRandom,
		Validate: func(context.Context, Point) (*Capacity, error) { return nil, nil },
		Run: func(_ context.Context, tr Trial) (*Outcome, error) {
			if tr.Number%2 == 0 {
				return &Outcome{LogTail: "CUDA out of memory"}, errors.New("server exited with status 1 during startup")
			}
			if tr.Number == 3 { // the server answered some requests with 5xx
				return &Outcome{Result: map[string]any{"request_throughput": 3.0, "completed": 7.0, "failed": 3.0}}, nil
			}
			return &Outcome{Result: map[string]any{"request_throughput": 3.0, "completed": 10.0, "failed": 0.0}}, nil
		}}
	if err := Optimize(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	trials, _ := store.Trials(context.Background(), "s")
	for _, tr := range trials {
		want := StateComplete
		if tr.Number%2 == 0 || tr.Number == 3 {
			want = StateFailed
		}
		if tr.Number == 3 && (tr.Reason != "3 of 10 requests failed" || tr.Score != 0) {
			t.Errorf("trial with failed requests: %q score %g", tr.Reason, tr.Score)
		}
		if tr.State != want {
			t.Errorf("trial %d: %s, want %s", tr.Number, tr.State, want)
		}
		if tr.Number%2 == 0 && (tr.Score != 0 || tr.LogTail != "CUDA out of memory" || !strings.Contains(tr.Reason, "during startup")) {
			t.Errorf("failed trial %d: %+v", tr.Number, tr)
		}
	}
}

func TestPenalisedStaysBelowHalfAndDecreases(t *testing.T) {
	for _, v := range []float64{0, 0.1, 1, 10} {
		if got := Penalised(10, v); got > 5 || got <= Penalised(10, v+1) {
			t.Errorf("Penalised(10, %g) = %g", v, got)
		}
	}
}
