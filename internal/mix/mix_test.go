package mix

import "testing"

// Reference values are splitmix64's published outputs for seed 0: the
// first three states are golden, 2*golden and 3*golden.
func TestSplitMix64MatchesTheReferenceSequence(t *testing.T) {
	want := []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f}
	for i, w := range want {
		if got := SplitMix64(uint64(i) * golden); got != w {
			t.Errorf("output %d = %#x, want %#x", i, got, w)
		}
	}
	if Finalize(0) != 0 {
		t.Error("the finalizer maps 0 to 0 by construction")
	}
}
