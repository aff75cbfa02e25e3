package serve

import (
	"testing"

	"github.com/servebench/servebench/runspec"
)

// TestRunSpecDefaultsAreServes: the serve flags' defaults, which runspec
// states without importing serve, are serve's own.
func TestRunSpecDefaultsAreServes(t *testing.T) {
	s := runspec.New(runspec.Serve)
	if s.Server.Tokenizer != DefaultTokenizer || s.Server.ErrorStyle != string(ErrorStyleNested) {
		t.Errorf("runspec's serve defaults: tokenizer %q, error style %q; serve's %q, %q", s.Server.Tokenizer, s.Server.ErrorStyle, DefaultTokenizer, ErrorStyleNested)
	}
}
