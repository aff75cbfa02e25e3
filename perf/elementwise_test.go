package perf

import (
	"math"
	"slices"
	"testing"
)

// llama2 is Llama-2-7B's or -70B's shape, the models Vidur profiled.
func llama2(size string) Model {
	if size == "70b" {
		return Model{Name: "Llama-2-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 28672, Vocab: 32000}
	}
	return Model{Name: "Llama-2-7b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 32, HeadDim: 128, Intermediate: 11008, Vocab: 32000}
}

// TestElementwiseTablesMatchVidur: the reduced tables (every profiled
// model's samples on one elements axis) give back the per-layer small
// kernels Vidur measured for Llama-2-7B at TP 1 and Llama-2-70B at TP 4,
// from one token (launch floors) to 4096 (bandwidth-bound).
func TestElementwiseTablesMatchVidur(t *testing.T) {
	cat := kernelTables()
	var errs []float64
	for _, r := range figureRows(t, "vidur-elementwise.tsv") {
		m := llama2(map[string]string{"meta-llama/Llama-2-7b-hf": "7b", "meta-llama/Llama-2-70b-hf": "70b"}[r["model"]])
		tp, tokens, us := int(figure(t, r, "tp")), figure(t, r, "tokens"), figure(t, r, "us")
		table := cat.find("elementwise", r["gpu"], "")
		if table == nil {
			t.Fatalf("no elementwise table for %s", r["gpu"])
		}
		got := 0.0
		for _, o := range m.layerOps(tp, 1, 0) {
			if name := []string{"", "rmsnorm", "rope", "silu_and_mul"}[int(o.op)]; name == r["op"] {
				got += o.layers * table.at2(float64(o.op), tokens*o.width) * 1e6
			}
		}
		errs = append(errs, math.Abs(got/us-1))
	}
	slices.Sort(errs)
	t.Logf("%d ops: error p50 %.1f%%, p80 %.1f%%, max %.1f%%", len(errs), 100*quantile(errs, 0.5), 100*quantile(errs, 0.8), 100*errs[len(errs)-1])
	if len(errs) < 100 || quantile(errs, 0.5) > 0.15 {
		t.Errorf("%d ops, median error %.1f%% against Vidur's measurements; want ≥ 100 and ≤ 15%%", len(errs), 100*quantile(errs, 0.5))
	}
}

// TestSmallKernelsInStep: a decode step pays each layer's small kernels
// at their launch floor (a few µs each on H100), and a GPU without a
// profile of its own reads its origin's on bandwidth-scaled elements: an
// A10 (600 GB/s) from A40 (696 GB/s) keeps the floor at one token and is
// slower in proportion at prefill sizes.
func TestSmallKernelsInStep(t *testing.T) {
	r := tabled(t, "Llama-3-8B", "H100", nil)
	one := r.kern.smallKernels.at(1) / float64(r.d.Model.Layers)
	if one < 8e-6 || one > 20e-6 {
		t.Errorf("H100 small kernels per layer at one token: %.1f µs, want the measured floors' 8–20 µs", one*1e6)
	}
	a40 := tabled(t, "Llama-3-8B", "A40", nil).kern.smallKernels
	a10 := tabled(t, "Llama-3-8B", "A10", nil).kern.smallKernels
	if got := a10.at(1) / a40.at(1); math.Abs(got-1) > 0.05 {
		t.Errorf("A10/A40 small kernels at one token: ratio %.3f, want the same floor", got)
	}
	if got, want := a10.at(8192)/a40.at(8192), 696.0/600; math.Abs(got/want-1) > 0.1 {
		t.Errorf("A10/A40 small kernels at 8192 tokens: ratio %.3f, want the bandwidth ratio %.3f", got, want)
	}
	if tabled(t, "Llama-3-8B", "MI300X", nil).kern != nil {
		t.Error("MI300X has kernel tables")
	}
}

// TestQKNormKernels: Qwen3's per-head query and key norms are two more
// RMSNorm launches per layer, so a Qwen3 decode step costs the same
// architecture without them about two small kernels per layer more.
func TestQKNormKernels(t *testing.T) {
	with := tabled(t, "Qwen3-8B", "H100", nil)
	without := tabled(t, "Qwen3-8B", "H100", func(d *Deployment) { d.Model.QKNorm = false })
	s := decodeStep(1, 1024)
	s.DecodeContext = s.AttnPairs
	extra := (with.StepTime(s) - without.StepTime(s)).Seconds() / float64(with.Deployment().Model.Layers)
	// Vidur's H100 RMSNorm over 4,096 and 1,024 elements: 4 µs each.
	if extra < 6e-6 || extra > 10e-6 {
		t.Errorf("q/k norms add %.1f µs per layer to a batch-1 decode, want 6-10 (two RMSNorm launches)", extra*1e6)
	}
	if !mustModel(t, "Qwen3-30B-A3B").QKNorm || mustModel(t, "Llama-3.1-8B").QKNorm {
		t.Error("catalog: Qwen3 models must have QKNorm, Llama must not")
	}
}
