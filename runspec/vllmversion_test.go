package runspec

import (
	"strings"
	"testing"

	"github.com/servebench/servebench/engine"
)

// TestVLLMVersionFlag: --vllm-version selects a release profile, --engine
// stays a shorthand, and bad values fail with one line naming the lines.
func TestVLLMVersionFlag(t *testing.T) {
	cases := []struct {
		args        []string
		wantRelease string
		wantEngine  engine.Version
		wantLegacy  bool
		wantErr     string
	}{
		{nil, "0.8.5", engine.V1, false, ""},
		{[]string{"--engine", "v0"}, "0.5.4", engine.V0, true, ""},
		{[]string{"--vllm-version", "0.6.3"}, "0.6.3", engine.V0, false, ""},
		{[]string{"--vllm-version", "0.5.4", "--legacy-requeue-order=false"}, "0.5.4", engine.V0, false, ""},
		{[]string{"--vllm-version", "0.9", "--engine", "v0"}, "0.9.0", engine.V0, false, ""},
		{[]string{"--vllm-version", "0.3.1"}, "", "", false, "--vllm-version: vLLM version 0.3.1 is not modelled; known release lines: 0.4, 0.5, 0.6, 0.7-0.10, 0.11+"},
		{[]string{"--vllm-version", "0.6.3", "--engine", "v1"}, "", "", false, "--vllm-version: vLLM 0.6.3 has no V1 engine"},
		{[]string{"--vllm-version", "0.5.3", "--num-scheduler-steps", "8"}, "", "", false, "--num-scheduler-steps: num_scheduler_steps (8): vLLM 0.5.3 has no multi-step scheduling; it arrived in 0.5.5 (PR #7000)"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, r, err := resolveArgs(t, append([]string{"--model", "Qwen2-7B"}, c.args...)...)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("error %v, want one line containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Profile.Release.String() != c.wantRelease || r.Engine.Version != c.wantEngine || r.Engine.LegacyRequeueOrder != c.wantLegacy {
				t.Errorf("got %s, legacy order %v; want %s %s, %v", r.Profile.Name(), r.Engine.LegacyRequeueOrder, c.wantRelease, c.wantEngine, c.wantLegacy)
			}
		})
	}
}
