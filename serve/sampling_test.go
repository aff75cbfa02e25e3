package serve

import (
	"math"
	"testing"
)

// vLLM interpolates Python floats into its messages; these are Python 3's
// repr of each value.
func TestPyFloatMatchesPythonRepr(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{5, "5.0"}, {-1, "-1.0"}, {0, "0.0"}, {1.5, "1.5"}, {0.1, "0.1"}, {2.5, "2.5"},
		{0.0001, "0.0001"}, {0.00001, "1e-05"}, {1.5e-7, "1.5e-07"},
		{1e15, "1000000000000000.0"}, {1e16, "1e+16"}, {1.25e100, "1.25e+100"},
		{123456789.125, "123456789.125"}, {math.MaxFloat64, "1.7976931348623157e+308"},
	}
	for _, tt := range tests {
		if got := pyFloat(tt.in); got != tt.want {
			t.Errorf("pyFloat(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Values at the edges of every range are accepted, as vLLM accepts them.
func TestSamplingBoundsAccepted(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	for _, p := range []sampling{
		{Temperature: f(0), TopP: f(1), TopK: i(-1), MinP: f(0), PresencePenalty: f(-2), FrequencyPenalty: f(2), RepetitionPenalty: f(1)},
		{Temperature: f(2), TopP: f(1e-9), TopK: i(0), MinP: f(1), PresencePenalty: f(2), FrequencyPenalty: f(-2), RepetitionPenalty: f(1e-9)},
		{Logprobs: []byte("null"), PromptLogprobs: nil},
		{Logprobs: []byte("false"), TopLogprobs: i(0)},
	} {
		for _, chat := range []bool{false, true} {
			if p.Logprobs != nil && string(p.Logprobs) == "false" && !chat {
				continue
			}
			if err := p.check(chat); err != nil {
				t.Errorf("%+v (chat %v): %s", p, chat, err.Message)
			}
		}
	}
}
