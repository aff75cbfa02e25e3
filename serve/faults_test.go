package serve

import (
	"testing"
)

func TestParseFaultTypes(t *testing.T) {
	got, err := ParseFaultTypes(" 429, drop,429 ")
	if err != nil || len(got) != 2 || got[0] != FaultRateLimit || got[1] != FaultDrop {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := ParseFaultTypes("429,teapot"); err == nil || err.Error() != `failure type "teapot": use a comma-separated list of 429, 500, 503, drop, slow-first-byte` {
		t.Errorf("error %v", err)
	}
	if got, err := ParseFaultTypes(""); err != nil || got != nil {
		t.Errorf("empty: %v %v", got, err)
	}
}

// TestFaultPick: the choice is a pure function of (seed, k), the rate holds,
// and every configured type is drawn.
func TestFaultPick(t *testing.T) {
	f := Faults{Rate: 0.2, Types: []FaultType{FaultRateLimit, FaultDrop}}
	const n = 20000
	count := map[FaultType]int{}
	for k := range uint64(n) {
		a, b := f.pick(9, k), f.pick(9, k)
		if a != b {
			t.Fatalf("pick(9, %d) not deterministic", k)
		}
		count[a]++
	}
	failed := n - count[""]
	if rate := float64(failed) / n; rate < 0.19 || rate > 0.21 {
		t.Errorf("failure rate %.3f, want 0.20 ± 0.01", rate)
	}
	if count[FaultRateLimit] == 0 || count[FaultDrop] == 0 || len(count) != 3 {
		t.Errorf("types drawn: %v", count)
	}
	if (Faults{}).pick(9, 1) != "" {
		t.Error("rate 0 injected a fault")
	}
	if (Faults{Rate: 1}).pick(9, 1) == "" {
		t.Error("rate 1 injected nothing")
	}
	for _, bad := range []Faults{{Rate: -0.1}, {Rate: 1.5}, {Rate: 0.5, Types: []FaultType{"418"}}, {SlowFirstByte: -1}} {
		if bad.validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
