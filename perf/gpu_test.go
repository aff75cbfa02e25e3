package perf

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func mustGPU(t testing.TB, name string) GPU {
	t.Helper()
	g, err := LookupGPU(name)
	if err != nil {
		t.Fatalf("LookupGPU(%q): %v", name, err)
	}
	return g
}

func TestGPUCatalog(t *testing.T) {
	// Reference D's data-sheet numbers.
	tests := []struct {
		name         string
		bandwidthGBs float64
		bf16TF       float64
		fp8          bool
		nvlink       bool
	}{
		{"A10", 600, 125, false, false},
		{"L4", 300, 121, true, false},
		{"L40S", 864, 362, true, false},
		{"A100-40GB", 1555, 312, false, true},
		{"A100-80GB", 2039, 312, false, true},
		{"H100-SXM", 3350, 989.5, true, true},
		{"H200", 4800, 989.5, true, true},
		{"RTX-4090", 1008, 165, true, false},
		// Vendor data sheets (doc.go): H20 and HGX B200 dense peaks, MI300X.
		{"H20", 4000, 148, true, true},
		{"B200", 8000, 2250, true, true},
		{"MI300X", 5300, 1307.4, true, true},
		// The corpus' parts (doc.go): A10G at its half-rate tensor
		// pipes (a measured matmul reaches 69.5 TF); A40, L40, the PCIe A100s and H100 and MI325X from their
		// data sheets. The PCIe parts' optional NVLink bridges pair only
		// two GPUs, so their default link is PCIe.
		{"A10G", 600, 70, false, false},
		{"A40", 696, 149.7, false, false},
		{"L40", 864, 181.05, true, false},
		{"A100-40GB-PCIe", 1555, 312, false, false},
		{"A100-80GB-PCIe", 1935, 312, false, false},
		{"H100-PCIe", 2000, 756, true, false},
		{"H100-NVL", 3900, 835.5, true, false},
		{"MI325X", 6000, 1307.4, true, true},
	}
	if len(GPUs()) != len(tests) {
		t.Errorf("GPUs() = %v, want the %d GPUs tested here", GPUs(), len(tests))
	}
	for _, tt := range tests {
		g := mustGPU(t, tt.name)
		if g.MemoryBandwidth != tt.bandwidthGBs*1e9 || g.BF16FLOPS != tt.bf16TF*1e12 {
			t.Errorf("%s: bandwidth %v, bf16 %v; want %v GB/s, %v TF", tt.name, g.MemoryBandwidth, g.BF16FLOPS, tt.bandwidthGBs, tt.bf16TF)
		}
		if (g.FP8FLOPS > 0) != tt.fp8 || (g.NVLinkBandwidth > 0) != tt.nvlink {
			t.Errorf("%s: fp8 %v nvlink %v; want fp8 %v nvlink %v", tt.name, g.FP8FLOPS, g.NVLinkBandwidth, tt.fp8, tt.nvlink)
		}
		for _, eff := range []float64{g.MFUPrefill, g.MFUDecode, g.MBU} {
			if eff <= 0 || eff > 1 {
				t.Errorf("%s: efficiency %v outside (0, 1]", tt.name, eff)
			}
		}
		if g.MFUDecode > g.MFUPrefill {
			t.Errorf("%s: decode MFU %v above prefill MFU %v", tt.name, g.MFUDecode, g.MFUPrefill)
		}
		if g.INT8FLOPS < g.BF16FLOPS || g.PCIeBandwidth <= 0 {
			t.Errorf("%s: int8 %v below bf16, or no PCIe rate", tt.name, g.INT8FLOPS)
		}
	}
	// torch reports a little under the marketing size.
	if gib := float64(mustGPU(t, "H100").MemoryBytes) / (1 << 30); gib < 79 || gib > 80 {
		t.Errorf("H100 memory %.2f GiB, want 79–80", gib)
	}
	// Measured: torch's total_memory of an A10G (22515 MiB, nm-vllm's
	// nightly benchmark context) and an A100-PCIE-40GB (40339 MiB).
	for name, want := range map[string]int64{"A10G": 22515 << 20, "A100-40GB-PCIe": 40339 << 20} {
		if got := mustGPU(t, name).MemoryBytes; got != want {
			t.Errorf("%s memory %d bytes, want %d", name, got, want)
		}
	}
}

func TestLookupGPUAliases(t *testing.T) {
	tests := map[string]string{
		"h100":                     "H100-SXM",
		"NVIDIA H100 80GB HBM3":    "H100-SXM",
		"nvidia-a100-sxm4-80gb":    "A100-80GB",
		"A100":                     "A100-80GB",
		"a100_40gb":                "A100-40GB",
		"NVIDIA GeForce RTX 4090":  "RTX-4090",
		"l40s":                     "L40S",
		" NVIDIA A10 ":             "A10",
		"h200-141gb":               "H200",
		"NVIDIA L4":                "L4",
		"rtx-4090":                 "RTX-4090",
		"NVIDIA A100-SXM4-40GB":    "A100-40GB",
		"NVIDIA H100 80GB HBM3 ":   "H100-SXM",
		"nvidia h100-sxm5-80gb":    "H100-SXM",
		"nvidia-geforce-rtx-4090 ": "RTX-4090",
		"NVIDIA B200":              "B200",
		"NVIDIA H20":               "H20",
		"AMD Instinct MI300X":      "MI300X",
		"NVIDIA A10G":              "A10G",
		"A10G":                     "A10G",
		"NVIDIA A40":               "A40",
		"NVIDIA L40":               "L40",
		"NVIDIA A100-PCIE-40GB":    "A100-40GB-PCIe",
		"NVIDIA A100 80GB PCIe":    "A100-80GB-PCIe",
		"NVIDIA H100 PCIe":         "H100-PCIe",
		"NVIDIA H100 NVL":          "H100-NVL",
		"AMD Instinct MI325X":      "MI325X",
	}
	for query, want := range tests {
		if g := mustGPU(t, query); g.Name != want {
			t.Errorf("LookupGPU(%q) = %s, want %s", query, g.Name, want)
		}
	}
	_, err := LookupGPU("TPU-v5e")
	if err == nil {
		t.Fatal("LookupGPU(TPU-v5e): want an error")
	}
	for _, want := range append(GPUs(), `"TPU-v5e"`, "YAML") {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestLoadGPUFile(t *testing.T) {
	g, err := LoadGPUFile("testdata/gpu-mi300x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := GPU{
		Name: "MI300X", MemoryBytes: int64(191.5 * (1 << 30)), MemoryBandwidth: 5300e9,
		BF16FLOPS: 1307e12, FP8FLOPS: 2615e12, INT8FLOPS: 2615e12,
		MFUPrefill: 0.40, MFUDecode: 0.35, MBU: 0.70, PCIeBandwidth: 50e9,
	}
	if g != want {
		t.Errorf("LoadGPUFile = %+v\nwant %+v", g, want)
	}
	g, err = LoadGPUFile("testdata/gpu-minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if g.MFUPrefill != defaultMFUPrefill || g.MFUDecode != defaultMFUDecode || g.MBU != defaultMBU || g.FP8FLOPS != 0 || g.PCIeBandwidth != defaultPCIeGBps*1e9 {
		t.Errorf("defaults not applied: %+v", g)
	}
	if _, err := LoadGPUFile("testdata/no-such.yaml"); err == nil || !strings.Contains(err.Error(), "testdata/no-such.yaml") {
		t.Errorf("missing file: got %v, want an error naming it", err)
	}
}

func TestParseGPUFileErrors(t *testing.T) {
	const ok = "name: x\nmemory_gib: 24\nbandwidth_gbps: 900\ntflops: {bf16: 100}\n"
	tests := []struct{ name, yaml, want string }{
		{"empty", "", "empty"},
		{"unknown field", ok + "memory_gb: 24\n", "field memory_gb not found"},
		{"unknown tflops field", "name: x\nmemory_gib: 24\nbandwidth_gbps: 900\ntflops: {bf16: 100, fp4: 1}\n", "field fp4 not found"},
		{"no name", "memory_gib: 24\nbandwidth_gbps: 900\ntflops: {bf16: 100}\n", "name is missing"},
		{"no bf16", "name: x\nmemory_gib: 24\nbandwidth_gbps: 900\n", "tflops.bf16 is 0"},
		{"negative memory", strings.Replace(ok, "24", "-1", 1), "memory_gib is -1"},
		{"mfu too big", ok + "mfu: 1.5\n", "mfu.prefill is 1.5"},
		{"mfu half", ok + "mfu: {prefill: 0.5}\n", "needs both prefill and decode"},
		{"mfu bad key", ok + "mfu: {prefil: 0.5, decode: 0.4}\n", "field prefil not found in mfu"},
		{"mfu list", ok + "mfu: [0.5]\n", "mfu must be a number"},
		{"mbu zero", ok + "mbu: 0\n", "mbu is 0"},
		{"string number", strings.Replace(ok, "900", "fast", 1), "cannot unmarshal"},
		{"two documents", ok + "---\n" + ok, "more than one YAML document"},
		{"nan", strings.Replace(ok, "900", ".nan", 1), "bandwidth_gbps is NaN"},
		{"sharp without nvlink", ok + "nvlink_sharp: true\n", "nvlink_sharp needs nvlink_gbps"},
		{"negative l2", ok + "l2_mib: -1\n", "l2_mib is -1"},
		{"l2 string", ok + "l2_mib: big\n", "cannot unmarshal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseGPUFile([]byte(tt.yaml), "gpus/card.yaml")
			if err == nil {
				t.Fatalf("want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "gpus/card.yaml") {
				t.Errorf("error %q: want it to contain %q and the file name", err, tt.want)
			}
		})
	}
	if g, err := ParseGPUFile([]byte(ok+"nvlink_gbps: 450\nnvlink_sharp: true\n"), "x.yaml"); err != nil || !g.NVLinkSHARP {
		t.Errorf("nvlink_sharp: got %+v, %v; want NVLinkSHARP", g, err)
	}
	g, err := ParseGPUFile([]byte(ok+"mfu: 0.6\n"), "x.yaml")
	if err != nil || g.MFUPrefill != 0.6 || g.MFUDecode != 0.6 {
		t.Errorf("scalar mfu: got %+v, %v; want 0.6 for both phases", g, err)
	}
	if g.L2Bytes != 0 {
		t.Errorf("no l2_mib: L2Bytes %d, want 0", g.L2Bytes)
	}
	if g, err := ParseGPUFile([]byte(ok+"l2_mib: 50\n"), "x.yaml"); err != nil || g.L2Bytes != 50<<20 {
		t.Errorf("l2_mib 50: got L2Bytes %d, %v; want %d", g.L2Bytes, err, 50<<20)
	}
}

func FuzzParseGPUFile(f *testing.F) {
	for _, p := range []string{"testdata/gpu-mi300x.yaml", "testdata/gpu-minimal.yaml"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("mfu: {prefill: 1, decode: .inf}\n"))
	f.Add([]byte("name: &a x\nmemory_gib: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "fuzz/gpu.yaml"
		g, err := ParseGPUFile(data, name)
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for _, v := range []float64{float64(g.MemoryBytes), g.MemoryBandwidth, g.BF16FLOPS, g.MFUPrefill, g.MFUDecode, g.MBU, g.PCIeBandwidth} {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Fatalf("accepted a GPU with a non-positive or infinite field: %+v", g)
			}
		}
		if g.Name == "" || g.MFUPrefill > 1 || g.MFUDecode > 1 || g.MBU > 1 {
			t.Fatalf("accepted an invalid GPU: %+v", g)
		}
	})
}

func TestLookupLink(t *testing.T) {
	tests := []struct {
		query, name  string
		bandwidthGBs float64
		latency      time.Duration
	}{
		{"nvlink", "nvlink", 450, 2 * time.Microsecond},
		{"NVLink", "nvlink", 450, 2 * time.Microsecond},
		{"pcie", "pcie", 25, 8 * time.Microsecond},
		{"ib", "infiniband", 40, 5 * time.Microsecond},
		{"InfiniBand", "infiniband", 40, 5 * time.Microsecond},
		{"ethernet", "ethernet", 10, 60 * time.Microsecond},
		{"tcp", "ethernet", 10, 60 * time.Microsecond},
	}
	for _, tt := range tests {
		l, err := LookupLink(tt.query)
		if err != nil {
			t.Errorf("LookupLink(%q): %v", tt.query, err)
			continue
		}
		if l.Name != tt.name || l.Bandwidth != tt.bandwidthGBs*1e9 || l.Latency != tt.latency {
			t.Errorf("LookupLink(%q) = %+v, want %s %v GB/s %v", tt.query, l, tt.name, tt.bandwidthGBs, tt.latency)
		}
	}
	if _, err := LookupLink("carrier-pigeon"); err == nil || !strings.Contains(err.Error(), "nvlink, pcie, infiniband, ethernet") {
		t.Errorf("unknown link: got %v, want an error listing the links", err)
	}
}

func TestAllReduceTime(t *testing.T) {
	l := Link{Name: "x", Bandwidth: 10e9, Latency: 10 * time.Microsecond}
	tests := []struct {
		t    int
		n    float64
		want float64
	}{
		{1, 1e6, 0},
		{2, 0, 2 * 10e-6},                      // 2 messages
		{2, 1e9, 2*10e-6 + 1e9/10e9},           // each rank sends n
		{4, 1e9, 6*10e-6 + 1.5*1e9/10e9},       // 2(t−1)/t = 1.5
		{8, 8e6, 14*10e-6 + 1.75*8e6/10e9},     // 2(t−1)/t = 1.75
		{16, 16e6, 30*10e-6 + 1.875*16e6/10e9}, // 2(t−1)/t = 1.875
	}
	for _, tt := range tests {
		if got := l.allReduceTime(tt.t, tt.n); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("allReduceTime(%d, %g) = %g, want %g", tt.t, tt.n, got, tt.want)
		}
	}
}
