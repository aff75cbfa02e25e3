package sim

import (
	"testing"
	"time"
)

// --log-stats on a fleet: every instance is sampled at every interval, in
// instance order, and the samples' token throughputs add up to what the
// engines counted.
func TestTopologyStatsSamplesEveryInstance(t *testing.T) {
	cfg := pdConfig(1, 2, testLink)
	cfg.StatsInterval = time.Second
	var samples []InstanceSample
	cfg.OnStats = func(s InstanceSample) { samples = append(samples, s) }
	reqs := randomWorkload(3, 200, 40)
	res, _ := runTopology(t, cfg, reqs)
	if len(samples) == 0 || len(samples)%3 != 0 {
		t.Fatalf("%d samples, want a positive multiple of 3 instances", len(samples))
	}
	wantOrder := []string{"prefill 0", "decode 0", "decode 1"}
	var gen [3]float64
	for i, s := range samples {
		if got := s.Role + " " + string(rune('0'+s.Index)); got != wantOrder[i%3] {
			t.Fatalf("sample %d is %s, want %s", i, got, wantOrder[i%3])
		}
		if want := samples[0].At + time.Duration(i/3)*time.Second; s.At != want {
			t.Fatalf("sample %d at %v, want %v", i, s.At, want)
		}
		gen[i%3] += s.GenerationThroughput // one-second intervals: tokens
	}
	last := samples[len(samples)-1].At
	if last > reqs[0].Arrival+res.Duration {
		t.Errorf("last sample at %v, after the run ended at %v", last, reqs[0].Arrival+res.Duration)
	}
	for k, in := range res.Instances {
		if gen[k] > float64(in.Engine.GenerationTokens)+0.5 {
			t.Errorf("%s %d: samples count %.0f generated tokens, the engine %d", in.Role, in.Index, gen[k], in.Engine.GenerationTokens)
		}
	}
}
