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
