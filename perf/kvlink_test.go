package perf

import (
	"math"
	"testing"
	"time"
)

// The rdma preset's fixed cost and per-NIC rate reproduce Mooncake's vLLM
// V1 transfer figures (H800 TP8, one CX-7 per GPU, so eight NICs): the
// reference file's part B4.
func TestKVLinkMatchesMooncakeFigures(t *testing.T) {
	rdma, err := LookupKVLink("rdma")
	if err != nil {
		t.Fatal(err)
	}
	tp8 := rdma
	tp8.NICs = 8
	for _, tt := range []struct {
		bytes int64
		want  time.Duration
		tol   float64
	}{
		{20e6, 540 * time.Microsecond, 0.10},
		{146e6, 1500 * time.Microsecond, 0.05},
		{4.5e9, 31650 * time.Microsecond, 0.05},
	} {
		got := tp8.TransferTime(tt.bytes)
		if rel := math.Abs(got.Seconds()/tt.want.Seconds() - 1); rel > tt.tol {
			t.Errorf("%d bytes: %v, Mooncake measured %v (off by %.0f%%, allowed %.0f%%)", tt.bytes, got, tt.want, 100*rel, 100*tt.tol)
		}
	}
	// Small transfers are latency-bound: utilisation rises with size.
	small, large := tp8.EffectiveBandwidth(20e6), tp8.EffectiveBandwidth(4.5e9)
	if !(small < 0.3*tp8.Bandwidth() && large > 0.9*tp8.Bandwidth()) {
		t.Errorf("effective bandwidth %.1f GB/s at 20 MB and %.1f GB/s at 4.5 GB of %.1f GB/s", small/1e9, large/1e9, tp8.Bandwidth()/1e9)
	}
}

func TestKVLinkPresets(t *testing.T) {
	oneGiB := int64(1 << 30)
	times := map[string]time.Duration{}
	for _, name := range KVLinkNames() {
		l, err := LookupKVLink(name)
		if err != nil || l.Validate() != nil {
			t.Fatalf("%s: %v %v", name, err, l.Validate())
		}
		times[name] = l.TransferTime(oneGiB)
	}
	if !(times["nvlink"] < times["rdma-2nic"] && times["rdma-2nic"] < times["rdma"] && times["rdma"] < times["tcp"]) {
		t.Errorf("1 GiB transfer times out of order: %v", times)
	}
	if _, err := LookupKVLink("carrier-pigeon"); err == nil {
		t.Error("unknown preset accepted")
	}
	for _, bad := range []KVLink{{Name: "x", NICs: 0, NICBandwidth: 1}, {Name: "x", NICs: 1}, {Name: "x", NICs: 1, NICBandwidth: 1, Setup: -1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// Qwen2.5-7B: 28 layers × 4 KV heads × 128 × 2 (K,V) × 2 bytes = 56 KiB
// per token; V0 adds 3584 × 2 bytes of hidden state (reference part B2).
func TestKVTransferBytes(t *testing.T) {
	m, err := LookupModel("Qwen/Qwen2.5-7B-Instruct")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tokens int
		hidden bool
		dtype  string
		want   int64
	}{
		{1, false, "auto", 56 << 10},
		{1024, false, "auto", 56 << 20},
		{1024, true, "auto", 56<<20 + 1024*3584*2},
		{256, false, "fp8", 7 << 20},
	}
	for _, tt := range tests {
		if got := KVTransferBytes(m, tt.dtype, tt.tokens, tt.hidden); got != tt.want {
			t.Errorf("%d tokens hidden=%v %s: %d bytes, want %d", tt.tokens, tt.hidden, tt.dtype, got, tt.want)
		}
	}
}
