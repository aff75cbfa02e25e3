package perf

import "testing"

// A release's non-torch accounting (NonTorchBytes, NonTorchMultiGPUBytes)
// moves the KV budget by exactly the difference, per GPU count.
func TestNonTorchOverride(t *testing.T) {
	m, err := LookupModel("Llama-3-8B")
	if err != nil {
		t.Fatal(err)
	}
	g, err := LookupGPU("H100")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		tp           int
		single, mult int64
		wantNonTorch int64
	}{
		{1, 0, 0, nonTorchBytesSingleGPU},
		{1, gib / 4, 3 * gib, gib / 4},
		{2, gib / 4, 0, nonTorchBytesMultiGPU},
		{2, gib / 4, 2 * gib, 2 * gib},
	}
	for _, c := range cases {
		d := DefaultDeployment(m, g)
		d.TensorParallel = c.tp
		d.NonTorchBytes, d.NonTorchMultiGPUBytes = c.single, c.mult
		capacity, err := d.Capacity()
		if err != nil {
			t.Fatal(err)
		}
		base := d
		base.NonTorchBytes, base.NonTorchMultiGPUBytes = 0, 0
		ref, err := base.Capacity()
		if err != nil {
			t.Fatal(err)
		}
		if capacity.NonTorchBytes != c.wantNonTorch {
			t.Errorf("tp %d: non-torch %d, want %d", c.tp, capacity.NonTorchBytes, c.wantNonTorch)
		}
		if got, want := capacity.KVCacheBytes-ref.KVCacheBytes, ref.NonTorchBytes-c.wantNonTorch; got != want {
			t.Errorf("tp %d: KV budget moved by %d, want %d", c.tp, got, want)
		}
	}
}
