package runspec

import (
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
