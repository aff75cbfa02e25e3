package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/tune"
)

// TestTunePrescreenRunsSimsBestOnTheEmbeddedServer screens 6 candidates
// on sim and checks the embedded server's first two trials are the two
// candidates sim scored best, in that order.
func TestTunePrescreenRunsSimsBestOnTheEmbeddedServer(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--target", "embedded", "--trials", "3", "--sampler", "random", "--sampler-seed", "4",
		"--prescreen-sim", "2", "--prescreen-candidates", "6",
		"--param", "max_num_seqs=1,2,3,4,6,8", "--", "--model", "Qwen2-0.5B", "--gpu", "H100",
		"--num-prompts", "12", "--random-input-len", "64", "--random-output-len", "8", "--request-rate", "inf"}
	_, stderr, trials, err := runTuneCmdIn(t, dir, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if len(trials) != 3 {
		t.Fatalf("%d trials, want 3", len(trials))
	}
	candidates, err := filepath.Glob(filepath.Join(dir, "prescreen", "candidate-*.json"))
	if err != nil || len(candidates) != 6 {
		t.Fatalf("%d screened results in prescreen/ (%v), want 6", len(candidates), err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "prescreen", "ranked.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ranked []tune.Trial
	if err := json.Unmarshal(data, &ranked); err != nil {
		t.Fatal(err)
	}
	if len(ranked) != 2 {
		t.Fatalf("ranked.json holds %d points, want 2", len(ranked))
	}
	if ranked[0].Score < ranked[1].Score {
		t.Errorf("ranked.json is not best first: %.3f then %.3f", ranked[0].Score, ranked[1].Score)
	}
	// The kept points are the screen's best: at most one candidate
	// (the other kept one) scores above the second.
	above := 0
	for _, c := range candidates {
		data, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		if tp, _ := m["request_throughput"].(float64); tp > ranked[1].Score+1e-9 {
			above++
		}
	}
	if above > 1 {
		t.Errorf("%d screened candidates beat the second kept point's %.3f", above, ranked[1].Score)
	}
	// A resume with a larger budget screens again to the same points and
	// runs neither of them twice.
	resumed := slices.Clone(args)
	resumed[slices.Index(resumed, "--trials")+1] = "4"
	if _, stderr, trials, err = runTuneCmdIn(t, dir, resumed...); err != nil {
		t.Fatalf("resume: %v\n%s", err, stderr)
	}
	if len(trials) != 4 {
		t.Fatalf("%d trials after the resume, want 4", len(trials))
	}
	for i, r := range ranked {
		if got, want := trials[i].Params["max_num_seqs"], r.Params["max_num_seqs"]; got != want {
			t.Errorf("trial %d ran max_num_seqs=%s, want sim's #%d %s", i, got, i+1, want)
		}
		if trials[i].State != tune.StateComplete {
			t.Errorf("trial %d: %s %s", i, trials[i].State, trials[i].Reason)
		}
	}
}

func TestTunePrescreenFlagErrors(t *testing.T) {
	base := []string{"--trials", "1", "--", "--model", "Qwen2-0.5B", "--gpu", "H100", "--num-prompts", "4"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"sim target", []string{"--prescreen-sim", "2"}, "--prescreen-sim: the target is already sim"},
		{"negative", []string{"--target", "embedded", "--prescreen-sim", "-1"}, "--prescreen-sim -1"},
		{"candidates alone", []string{"--target", "embedded", "--prescreen-candidates", "5"}, "--prescreen-candidates needs --prescreen-sim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := runTuneCmd(t, append(tc.args, base...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
