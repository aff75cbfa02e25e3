package perf

import (
	"fmt"
	"math"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

const (
	gib = 1 << 30
	mib = 1 << 20
	gb  = 1e9
	tf  = 1e12
)

// GPU is one accelerator: memory, bandwidths, dense peak FLOP/s per dtype
// and the efficiencies the roofline applies to them. Rates are per second.
type GPU struct {
	Name string
	// MemoryBytes is the device memory torch reports (slightly under the
	// marketing size: an "80 GB" H100 shows 79.1 GiB).
	MemoryBytes int64
	// MemoryBandwidth is peak HBM/GDDR bandwidth in bytes/s.
	MemoryBandwidth float64
	// Dense (non-sparse) tensor-core peaks in FLOP/s; 0 means the GPU has
	// no such mode (no FP8 before Ada/Hopper).
	BF16FLOPS, FP8FLOPS, INT8FLOPS float64
	// MFUPrefill and MFUDecode are the fractions of peak FLOP/s that GEMMs
	// reach on prefill rows and on decode rows; MBU the fraction of peak
	// bandwidth reached when streaming weights and KV.
	MFUPrefill, MFUDecode, MBU float64
	// PCIeBandwidth is the effective host<->device copy rate (KV swap).
	PCIeBandwidth float64
	// NVLinkBandwidth is the effective per-direction NVLink rate; 0 for
	// GPUs without NVLink.
	NVLinkBandwidth float64
	// NVLinkSHARP: the node's GPUs meet at NVLink switches that can
	// multicast and reduce (NVLS: HGX Hopper and Blackwell boards). NCCL
	// then sets aside NVLS buffers for every communicator of more than
	// two local ranks (doc.go, "NVLink SHARP buffers").
	NVLinkSHARP bool
	// L2Bytes is the on-die L2 cache (data sheets and architecture
	// whitepapers, doc.go); 0 where none is recorded, and then no decode
	// reads of shared prefix blocks are taken from it.
	L2Bytes int64
	// Scale multiplies the attained efficiencies (a calibration's fit).
	Scale EfficiencyScale
}

type catalogGPU struct {
	gpu     GPU
	aliases []string
}

// gpuCatalog: memory as torch reports it, bandwidth and dense peaks from the
// vendor data sheets (reference D table), efficiencies as argued in doc.go.
var gpuCatalog = []catalogGPU{
	{GPU{Name: "A10", L2Bytes: 6 * mib, MemoryBytes: 22 * gib, MemoryBandwidth: 600 * gb,
		BF16FLOPS: 125 * tf, INT8FLOPS: 250 * tf,
		MFUPrefill: 0.50, MFUDecode: 0.45, MBU: 0.75, PCIeBandwidth: 25 * gb},
		[]string{"a10-24gb", "a10-pcie"}},
	{GPU{Name: "L4", L2Bytes: 48 * mib, MemoryBytes: 22 * gib, MemoryBandwidth: 300 * gb,
		BF16FLOPS: 121 * tf, FP8FLOPS: 242 * tf, INT8FLOPS: 242 * tf,
		MFUPrefill: 0.45, MFUDecode: 0.40, MBU: 0.75, PCIeBandwidth: 25 * gb},
		[]string{"l4-24gb"}},
	{GPU{Name: "L40S", L2Bytes: 96 * mib, MemoryBytes: gibf(44.52), MemoryBandwidth: 864 * gb,
		BF16FLOPS: 362 * tf, FP8FLOPS: 733 * tf, INT8FLOPS: 733 * tf,
		MFUPrefill: 0.45, MFUDecode: 0.40, MBU: 0.75, PCIeBandwidth: 25 * gb},
		[]string{"l40s-48gb"}},
	{GPU{Name: "A100-40GB", L2Bytes: 40 * mib, MemoryBytes: gibf(39.39), MemoryBandwidth: 1555 * gb,
		BF16FLOPS: 312 * tf, INT8FLOPS: 624 * tf,
		MFUPrefill: 0.55, MFUDecode: 0.50, MBU: 0.80, PCIeBandwidth: 25 * gb, NVLinkBandwidth: 300 * gb},
		[]string{"a100-40g", "a100-sxm4-40gb", "a100-sxm-40gb", "a100-40"}},
	{GPU{Name: "A100-80GB", L2Bytes: 40 * mib, MemoryBytes: gibf(79.15), MemoryBandwidth: 2039 * gb,
		BF16FLOPS: 312 * tf, INT8FLOPS: 624 * tf,
		MFUPrefill: 0.55, MFUDecode: 0.50, MBU: 0.80, PCIeBandwidth: 25 * gb, NVLinkBandwidth: 300 * gb},
		[]string{"a100", "a100-80g", "a100-sxm", "a100-sxm4-80gb", "a100-sxm-80gb", "a100-80"}},
	{GPU{Name: "H100-SXM", L2Bytes: 50 * mib, MemoryBytes: gibf(79.11), MemoryBandwidth: 3350 * gb,
		BF16FLOPS: 989.5 * tf, FP8FLOPS: 1979 * tf, INT8FLOPS: 1979 * tf,
		MFUPrefill: 0.50, MFUDecode: 0.45, MBU: 0.80, PCIeBandwidth: 50 * gb, NVLinkBandwidth: 450 * gb, NVLinkSHARP: true},
		[]string{"h100", "h100-80gb", "h100-sxm5", "h100-sxm5-80gb", "h100-80gb-hbm3", "h100-sxm-80gb"}},
	{GPU{Name: "H200", L2Bytes: 50 * mib, MemoryBytes: gibf(139.8), MemoryBandwidth: 4800 * gb,
		BF16FLOPS: 989.5 * tf, FP8FLOPS: 1979 * tf, INT8FLOPS: 1979 * tf,
		MFUPrefill: 0.50, MFUDecode: 0.45, MBU: 0.80, PCIeBandwidth: 50 * gb, NVLinkBandwidth: 450 * gb, NVLinkSHARP: true},
		[]string{"h200-sxm", "h200-141gb"}},
	{GPU{Name: "H20", MemoryBytes: gibf(94.93), MemoryBandwidth: 4000 * gb,
		BF16FLOPS: 148 * tf, FP8FLOPS: 296 * tf, INT8FLOPS: 296 * tf,
		MFUPrefill: 0.50, MFUDecode: 0.45, MBU: 0.80, PCIeBandwidth: 50 * gb, NVLinkBandwidth: 450 * gb, NVLinkSHARP: true},
		[]string{"h20-96gb"}},
	{GPU{Name: "B200", MemoryBytes: gibf(178.35), MemoryBandwidth: 8000 * gb,
		BF16FLOPS: 2250 * tf, FP8FLOPS: 4500 * tf, INT8FLOPS: 4500 * tf,
		MFUPrefill: 0.50, MFUDecode: 0.45, MBU: 0.80, PCIeBandwidth: 50 * gb, NVLinkBandwidth: 900 * gb, NVLinkSHARP: true},
		[]string{"b200-180gb", "b200-sxm", "hgx-b200"}},
	{GPU{Name: "MI300X", MemoryBytes: gibf(191.5), MemoryBandwidth: 5300 * gb,
		BF16FLOPS: 1307.4 * tf, FP8FLOPS: 2614.9 * tf, INT8FLOPS: 2614.9 * tf,
		MFUPrefill: 0.45, MFUDecode: 0.40, MBU: 0.75, PCIeBandwidth: 50 * gb, NVLinkBandwidth: 448 * gb},
		[]string{"amd-instinct-mi300x", "instinct-mi300x", "amd-mi300x"}},
	{GPU{Name: "RTX-4090", L2Bytes: 72 * mib, MemoryBytes: gibf(23.65), MemoryBandwidth: 1008 * gb,
		BF16FLOPS: 165 * tf, FP8FLOPS: 330 * tf, INT8FLOPS: 660 * tf,
		MFUPrefill: 0.55, MFUDecode: 0.50, MBU: 0.75, PCIeBandwidth: 25 * gb},
		[]string{"4090", "rtx4090", "geforce-rtx-4090"}},
	// The parts below are the ones the published-runs corpus
	// (validate/corpus) was measured on; doc.go cites each number.
	{GPU{Name: "A10G", L2Bytes: 6 * mib, MemoryBytes: 22515 * mib, MemoryBandwidth: 600 * gb,
		BF16FLOPS: 70 * tf, INT8FLOPS: 140 * tf,
		MFUPrefill: 0.50, MFUDecode: 0.45, MBU: 0.75, PCIeBandwidth: 25 * gb},
		[]string{"a10g-24gb", "aws-a10g"}},
	{GPU{Name: "A40", L2Bytes: 6 * mib, MemoryBytes: gibf(44.52), MemoryBandwidth: 696 * gb,
		BF16FLOPS: 149.7 * tf, INT8FLOPS: 299.3 * tf,
		MFUPrefill: 0.50, MFUDecode: 0.45, MBU: 0.75, PCIeBandwidth: 25 * gb},
		[]string{"a40-48gb", "a40-pcie"}},
	{GPU{Name: "L40", L2Bytes: 96 * mib, MemoryBytes: gibf(44.52), MemoryBandwidth: 864 * gb,
		BF16FLOPS: 181.05 * tf, FP8FLOPS: 362 * tf, INT8FLOPS: 362 * tf,
		MFUPrefill: 0.45, MFUDecode: 0.40, MBU: 0.75, PCIeBandwidth: 25 * gb},
		[]string{"l40-48gb"}},
	{GPU{Name: "A100-40GB-PCIe", L2Bytes: 40 * mib, MemoryBytes: 40339 * mib, MemoryBandwidth: 1555 * gb,
		BF16FLOPS: 312 * tf, INT8FLOPS: 624 * tf,
		MFUPrefill: 0.55, MFUDecode: 0.50, MBU: 0.80, PCIeBandwidth: 25 * gb},
		[]string{"a100-pcie-40gb", "a100-40gb-pcie", "a100-pcie"}},
	{GPU{Name: "A100-80GB-PCIe", L2Bytes: 40 * mib, MemoryBytes: gibf(79.15), MemoryBandwidth: 1935 * gb,
		BF16FLOPS: 312 * tf, INT8FLOPS: 624 * tf,
		MFUPrefill: 0.55, MFUDecode: 0.50, MBU: 0.80, PCIeBandwidth: 25 * gb},
		[]string{"a100-pcie-80gb", "a100-80gb-pcie"}},
	{GPU{Name: "H100-PCIe", L2Bytes: 50 * mib, MemoryBytes: gibf(79.11), MemoryBandwidth: 2000 * gb,
		BF16FLOPS: 756 * tf, FP8FLOPS: 1513 * tf, INT8FLOPS: 1513 * tf,
		MFUPrefill: 0.50, MFUDecode: 0.45, MBU: 0.80, PCIeBandwidth: 50 * gb},
		[]string{"h100-pcie-80gb", "h100-80gb-pcie"}},
	{GPU{Name: "H100-NVL", L2Bytes: 50 * mib, MemoryBytes: gibf(92.96), MemoryBandwidth: 3900 * gb,
		BF16FLOPS: 835.5 * tf, FP8FLOPS: 1670.5 * tf, INT8FLOPS: 1670.5 * tf,
		MFUPrefill: 0.50, MFUDecode: 0.45, MBU: 0.80, PCIeBandwidth: 50 * gb},
		[]string{"h100-nvl-94gb", "h100nvl"}},
	{GPU{Name: "MI325X", MemoryBytes: gibf(255.5), MemoryBandwidth: 6000 * gb,
		BF16FLOPS: 1307.4 * tf, FP8FLOPS: 2614.9 * tf, INT8FLOPS: 2614.9 * tf,
		MFUPrefill: 0.45, MFUDecode: 0.40, MBU: 0.75, PCIeBandwidth: 50 * gb, NVLinkBandwidth: 448 * gb},
		[]string{"instinct-mi325x", "amd-mi325x", "mi325x-256gb"}},
}

func gibf(x float64) int64 { return int64(x * gib) }

// GPUs lists the catalog's GPU names.
func GPUs() []string {
	names := make([]string, len(gpuCatalog))
	for i, c := range gpuCatalog {
		names[i] = c.gpu.Name
	}
	return names
}

func normalizeGPUName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.NewReplacer(" ", "-", "_", "-").Replace(s)
	s = strings.TrimPrefix(s, "nvidia-")
	s = strings.TrimPrefix(s, "amd-instinct-")
	return s
}

// LookupGPU returns a catalog GPU by name, case-insensitively; nvidia-smi
// spellings such as "NVIDIA H100 80GB HBM3" are accepted.
func LookupGPU(name string) (GPU, error) {
	key := normalizeGPUName(name)
	for _, c := range gpuCatalog {
		if normalizeGPUName(c.gpu.Name) == key {
			return c.gpu, nil
		}
		for _, a := range c.aliases {
			if a == key {
				return c.gpu, nil
			}
		}
	}
	return GPU{}, fmt.Errorf("perf: unknown GPU %q; known GPUs: %s; or describe it in a YAML file (name, memory_gib, bandwidth_gbps, tflops: {bf16, fp8, int8})",
		name, strings.Join(GPUs(), ", "))
}

// Default efficiencies for a GPU file that gives none (see doc.go).
const (
	defaultMFUPrefill = 0.50
	defaultMFUDecode  = 0.45
	defaultMBU        = 0.75
	defaultPCIeGBps   = 25
)

// gpuFile is the YAML a user writes for a GPU the catalog lacks.
type gpuFile struct {
	Name          string      `yaml:"name"`
	MemoryGiB     float64     `yaml:"memory_gib"`
	BandwidthGBps float64     `yaml:"bandwidth_gbps"`
	TFLOPS        gpuFileRate `yaml:"tflops"`
	MFU           *mfuSetting `yaml:"mfu"`
	MBU           *float64    `yaml:"mbu"`
	PCIeGBps      *float64    `yaml:"pcie_gbps"`
	NVLinkGBps    *float64    `yaml:"nvlink_gbps"`
	NVLinkSHARP   bool        `yaml:"nvlink_sharp"`
	L2MiB         *float64    `yaml:"l2_mib"`
}

type gpuFileRate struct {
	BF16 float64 `yaml:"bf16"`
	FP8  float64 `yaml:"fp8"`
	INT8 float64 `yaml:"int8"`
}

// mfuSetting accepts "mfu: 0.5" (both phases) or
// "mfu: {prefill: 0.5, decode: 0.4}".
type mfuSetting struct {
	Prefill, Decode float64
}

func (s *mfuSetting) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind == yaml.ScalarNode {
		var v float64
		if err := node.Decode(&v); err != nil {
			return fmt.Errorf("line %d: mfu must be a number or {prefill, decode}", node.Line)
		}
		s.Prefill, s.Decode = v, v
		return nil
	}
	if node.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: mfu must be a number or {prefill, decode}", node.Line)
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		key, val := node.Content[i], node.Content[i+1]
		var dst *float64
		switch key.Value {
		case "prefill":
			dst = &s.Prefill
		case "decode":
			dst = &s.Decode
		default:
			return fmt.Errorf("line %d: field %s not found in mfu (want prefill, decode)", key.Line, key.Value)
		}
		if err := val.Decode(dst); err != nil {
			return fmt.Errorf("line %d: mfu.%s must be a number", val.Line, key.Value)
		}
	}
	if s.Prefill == 0 || s.Decode == 0 {
		return fmt.Errorf("line %d: mfu needs both prefill and decode", node.Line)
	}
	return nil
}

// LoadGPUFile reads a GPU description from YAML:
//
//	name: MI300X-like
//	memory_gib: 191.5
//	bandwidth_gbps: 5300      # GB/s
//	tflops: {bf16: 1307, fp8: 2615, int8: 2615}
//	mfu: {prefill: 0.4, decode: 0.35}   # optional
//	mbu: 0.7                            # optional
//	pcie_gbps: 50                       # optional, KV swap
//	nvlink_gbps: 400                    # optional, 0/absent = none
//	nvlink_sharp: true                  # optional: NVSwitch with multicast (NVLS)
//	l2_mib: 50                          # optional: L2 cache; 0/absent = no shared-prefix reads from it
func LoadGPUFile(path string) (GPU, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return GPU{}, fmt.Errorf("perf: read GPU file: %w", err)
	}
	return ParseGPUFile(data, path)
}

// ParseGPUFile parses the YAML LoadGPUFile reads; name appears in errors.
func ParseGPUFile(data []byte, name string) (GPU, error) {
	fail := func(format string, args ...any) (GPU, error) {
		return GPU{}, fmt.Errorf("perf: GPU file %s: %s", name, fmt.Sprintf(format, args...))
	}
	var f gpuFile
	if err := decodeYAMLDocument(data, &f, "name, memory_gib, bandwidth_gbps, tflops"); err != nil {
		return fail("%v", err)
	}
	g := GPU{
		Name:            strings.TrimSpace(f.Name),
		MemoryBytes:     int64(f.MemoryGiB * gib),
		MemoryBandwidth: f.BandwidthGBps * gb,
		BF16FLOPS:       f.TFLOPS.BF16 * tf,
		FP8FLOPS:        f.TFLOPS.FP8 * tf,
		INT8FLOPS:       f.TFLOPS.INT8 * tf,
		MFUPrefill:      defaultMFUPrefill,
		MFUDecode:       defaultMFUDecode,
		MBU:             defaultMBU,
		PCIeBandwidth:   defaultPCIeGBps * gb,
	}
	if f.MFU != nil {
		g.MFUPrefill, g.MFUDecode = f.MFU.Prefill, f.MFU.Decode
	}
	if f.MBU != nil {
		g.MBU = *f.MBU
	}
	if f.PCIeGBps != nil {
		g.PCIeBandwidth = *f.PCIeGBps * gb
	}
	if f.NVLinkGBps != nil {
		g.NVLinkBandwidth = *f.NVLinkGBps * gb
	}
	l2MiB := 0.0
	if f.L2MiB != nil {
		l2MiB = *f.L2MiB
		g.L2Bytes = int64(l2MiB * mib)
	}
	if f.NVLinkSHARP {
		if g.NVLinkBandwidth <= 0 {
			return fail("nvlink_sharp needs nvlink_gbps: NVLink SHARP runs on the NVLink switches")
		}
		g.NVLinkSHARP = true
	}
	if g.Name == "" {
		return fail("name is missing")
	}
	ranges := []struct {
		v        float64
		lo, hi   float64
		field    string
		optional bool
	}{
		{f.MemoryGiB, 0, 1 << 16, "memory_gib", false},
		{f.BandwidthGBps, 0, 1e6, "bandwidth_gbps", false},
		{f.TFLOPS.BF16, 0, 1e6, "tflops.bf16", false},
		{f.TFLOPS.FP8, 0, 1e6, "tflops.fp8", true},
		{f.TFLOPS.INT8, 0, 1e6, "tflops.int8", true},
		{g.MFUPrefill, 0, 1, "mfu.prefill", false},
		{g.MFUDecode, 0, 1, "mfu.decode", false},
		{g.MBU, 0, 1, "mbu", false},
		{g.PCIeBandwidth / gb, 0, 1e4, "pcie_gbps", false},
		{g.NVLinkBandwidth / gb, 0, 1e5, "nvlink_gbps", true},
		{l2MiB, 0, 1 << 16, "l2_mib", true},
	}
	for _, r := range ranges {
		if math.IsNaN(r.v) || r.v > r.hi || r.v < r.lo || (r.v == r.lo && !r.optional) {
			if r.optional {
				return fail("%s is %v; it must be between %v and %v (0 or absent = unsupported)", r.field, r.v, r.lo, r.hi)
			}
			return fail("%s is %v; it must be above %v and at most %v", r.field, r.v, r.lo, r.hi)
		}
	}
	return g, nil
}
