package sim

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/runspec"
)

// TestRunSpecNamesSimsChoices: the fleet flags' defaults and help, which
// runspec states without importing sim, are sim's own values.
func TestRunSpecNamesSimsChoices(t *testing.T) {
	s := runspec.New(runspec.Sim)
	if s.Topology.Router != string(RouteRoundRobin) || s.Topology.Handoff != string(HandoffSequential) || s.Topology.KVBufferOverflow != string(OverflowSpill) {
		t.Errorf("runspec's fleet defaults %+v are not sim's", s.Topology)
	}
	fs := pflag.NewFlagSet("sim", pflag.ContinueOnError)
	new(runspec.Topology).Register(fs)
	usage := fs.Lookup("router").Usage
	for _, p := range RouterPolicies() {
		if !strings.Contains(usage, p) {
			t.Errorf("--router's help %q does not list %s", usage, p)
		}
	}
}

// TestChatTemplateStartupLine: on vLLM 0.11.0 a chat backend's run says on
// stderr which chat template the per-request parse charges; a completions
// run, which pays no chat preparation, does not.
func TestChatTemplateStartupLine(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	for _, c := range []struct {
		backend string
		want    bool
	}{{"openai-chat", true}, {"vllm", false}} {
		s, err := runspec.Parse(runspec.Sim, []string{"--model", "Qwen/Qwen3-8B", "--gpu", "H100", "--vllm-version", "0.11.0",
			"--backend", c.backend, "--num-prompts", "4", "--random-input-len", "32", "--random-output-len", "4"})
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		if err := RunSpec(t.Context(), s, runspec.IO{Err: &stderr}); err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(stderr.String(), "parses the chat template on every chat request: the qwen3 chat template (measured)")
		if got != c.want {
			t.Errorf("--backend %s: chat template line %v, want %v; stderr:\n%s", c.backend, got, c.want, stderr.String())
		}
	}
}
