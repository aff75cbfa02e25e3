package main

import (
	"strings"
	"testing"
	"time"
)

func TestLatencyValue(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"100", 100 * time.Millisecond, false},
		{"2.5", 2500 * time.Microsecond, false},
		{"0", 0, false},
		{"250us", 250 * time.Microsecond, false},
		{"1.5s", 1500 * time.Millisecond, false},
		{"fast", 0, true},
	} {
		var d time.Duration
		err := latencyValue{&d}.Set(tc.in)
		if (err != nil) != tc.bad || d != tc.want {
			t.Errorf("Set(%q) = %v, %v; want %v, error %v", tc.in, d, err, tc.want, tc.bad)
		}
	}
}

// TestServeRejectsBadFixedLatency: llm-d-inference-sim's bounds are
// checked before listening, and the error names the flag.
func TestServeRejectsBadFixedLatency(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--inter-token-latency", "10", "--inter-token-latency-std-dev", "5"}, "--inter-token-latency-std-dev"},
		{[]string{"--time-factor-under-load", "0.5"}, "--time-factor-under-load"},
		{[]string{"--time-to-first-token", "soon"}, "time-to-first-token"},
		{[]string{"--kv-cache-transfer-latency", "100", "--kv-cache-transfer-latency-std-dev", "50"}, "--kv-cache-transfer-latency-std-dev"},
	} {
		_, _, err := runCLI(t, append([]string{"serve", "--port", "0"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %s", tc.args, err, tc.want)
		}
	}
}
