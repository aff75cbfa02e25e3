package main

import (
	"strings"
	"testing"
)

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
