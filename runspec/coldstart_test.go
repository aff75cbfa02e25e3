package runspec

import (
	"strings"
	"testing"
)

// TestColdStartFlag: --cold-start reaches the resolved deployment for a
// MoE model (and stays off without it), and a vllm serve command line
// refuses it, as vLLM has no such flag.
func TestColdStartFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		cold bool
	}{
		{[]string{"--model", "Mixtral-8x7B", "--tensor-parallel-size", "2"}, false},
		{[]string{"--model", "Mixtral-8x7B", "--tensor-parallel-size", "2", "--cold-start"}, true},
		{[]string{"--model", "Qwen2-0.5B", "--cold-start"}, false}, // dense: nothing to compile
	} {
		_, r, err := resolveArgs(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.ColdStart != nil; got != tc.cold {
			t.Errorf("%v: ColdStart set %v, want %v", tc.args, got, tc.cold)
		}
	}
	_, err := ParseServerArgs([]string{"--cold-start"})
	if err == nil || !strings.Contains(err.Error(), "cold-start") {
		t.Errorf("vllm serve --cold-start: error %v, want one naming the flag", err)
	}
}
