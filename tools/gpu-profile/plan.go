package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/servebench/servebench/perf"
)

// plan is what profile.py reads.
type plan struct {
	GEMMs  []gemm       `json:"gemms"`
	Models []layerModel `json:"models"`
	// FP8GEMMs are W8A8 GEMMs (per-token activation and per-channel
	// weight scales, as vLLM runs FP8 checkpoints on Hopper): the FP8
	// sharded layers' quantized shapes, then the grid.
	FP8GEMMs []gemm `json:"gemms_fp8"`
	// Sharded are decoder layers as one tensor-parallel rank runs them,
	// without the all-reduces a single GPU cannot measure.
	Sharded []layerModel `json:"sharded"`
	Grid    grid         `json:"grid"`
	Smoke   grid         `json:"smoke"`
	Notes   []string     `json:"notes"`
}

// gemm is one linear layer: y[M, N] = x[M, K] · W[N, K]ᵀ.
type gemm struct {
	Model string `json:"model"`
	TP    int    `json:"tp"`
	Name  string `json:"name"`
	N     int    `json:"n"`
	K     int    `json:"k"`
}

type layerModel struct {
	Name         string `json:"name"`
	Layers       int    `json:"layers"`
	Hidden       int    `json:"hidden"`
	Heads        int    `json:"heads"`
	KVHeads      int    `json:"kv_heads"`
	HeadDim      int    `json:"head_dim"`
	Intermediate int    `json:"intermediate"`
	Vocab        int    `json:"vocab"`
	// QKNorm: Qwen3 normalises each head's query and key before the rotary
	// embedding (Qwen3Attention's q_norm and k_norm).
	QKNorm bool `json:"qk_norm"`
	// TP is the tensor-parallel size the heads and MLP are sliced for
	// (heads, kv_heads and intermediate above are one rank's share).
	TP int `json:"tp"`
	// MLPFP8: the MLP runs W8A8 FP8 GEMMs (the attention projections stay
	// BF16 when the checkpoint skips them, as Meta's FP8 405B does).
	MLPFP8       bool `json:"mlp_fp8"`
	AttentionFP8 bool `json:"attention_fp8"`
}

type grid struct {
	M                []int         `json:"m"`
	AttentionPrefill attentionGrid `json:"attention_prefill"`
	AttentionDecode  attentionGrid `json:"attention_decode"`
	Layer            layerGrid     `json:"layer"`
	Sharded          layerGrid     `json:"sharded"`
}

type attentionGrid struct {
	Heads    [][2]int `json:"heads"` // (query heads, KV heads) per GPU
	Batches  []int    `json:"batches"`
	ISL      []int    `json:"isl,omitempty"`
	Contexts []int    `json:"contexts,omitempty"`
	MaxBytes int64    `json:"max_bytes"`
}

type layerGrid struct {
	Prefill  []int `json:"prefill"`
	Batches  []int `json:"batches"`
	Contexts []int `json:"contexts"`
}

// tableM is the M axis of the imported GEMM tables, so every measured
// point has an imported one to compare with.
var tableM = []int{1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 512, 768, 1024, 2048, 4096, 8192}

// tableNK are grid points of the imported tables' N and K axes, measured
// on their own to compare the tables away from any model's shapes.
var tableNK = []int{1024, 4096, 8192, 16384}

const gpuBytes = 80e9

func makePlan(models, layerModels, tpArgs, shardedArgs []string) (plan, error) {
	var tps []int
	for _, s := range tpArgs {
		t, err := strconv.Atoi(s)
		if err != nil || t < 1 {
			return plan{}, fmt.Errorf("-tp %q: want positive integers such as 1,2,4,8", s)
		}
		tps = append(tps, t)
	}
	p := plan{Notes: []string{
		"gemms: each catalog model's per-layer linear shapes and lm_head on one of tp GPUs, from its smallest TP whose weights fit 80 GB, then the grid points n, k in " + fmt.Sprint(tableNK),
		"attention: head_dim 128, bf16; decode is one query per sequence over a contiguous cache",
	}}
	// Ordered by how much the comparison needs them, since a short lease
	// cuts the list's tail: each model at its smallest TP that fits one
	// GPU's share, then the table's grid, then the other TP slices.
	var first, rest []gemm
	for _, name := range models {
		m, err := perf.LookupModel(name)
		if err != nil {
			return plan{}, fmt.Errorf("-models: %w", err)
		}
		fits := false
		for _, t := range tps {
			if float64(m.WeightBytes())/float64(t) > gpuBytes*0.9 {
				continue
			}
			if !fits {
				first = append(first, linearShapes(m, t)...)
				fits = true
				continue
			}
			rest = append(rest, linearShapes(m, t)...)
		}
	}
	p.GEMMs = first
	for _, n := range tableNK {
		for _, k := range tableNK {
			p.GEMMs = append(p.GEMMs, gemm{Model: "grid", TP: 1, Name: "grid", N: n, K: k})
		}
	}
	p.GEMMs = append(p.GEMMs, rest...)
	for _, name := range layerModels {
		m, err := perf.LookupModel(name)
		if err != nil {
			return plan{}, fmt.Errorf("-layer-models: %w", err)
		}
		if m.IsMoE() || m.IsMLA() || m.HeadDim != 128 {
			return plan{}, fmt.Errorf("-layer-models %s: only dense grouped-query models with head_dim 128 are measured as a layer", name)
		}
		p.Models = append(p.Models, layerModel{
			Name: m.Name, Layers: m.Layers, Hidden: m.Hidden, Heads: m.Heads, KVHeads: m.KVHeads,
			HeadDim: m.HeadDim, Intermediate: m.Intermediate, Vocab: m.Vocab,
			QKNorm: m.QKNorm,
		})
	}
	if err := addSharded(&p, shardedArgs); err != nil {
		return plan{}, err
	}
	p.Grid = grid{
		M: tableM,
		AttentionPrefill: attentionGrid{
			Heads: [][2]int{{32, 8}, {64, 8}, {40, 8}}, Batches: []int{1, 4},
			ISL: []int{128, 256, 512, 1024, 2048, 4096, 8192, 16384}, MaxBytes: 8 << 30,
		},
		AttentionDecode: attentionGrid{
			Heads: [][2]int{{32, 8}, {40, 8}}, Batches: []int{1, 8, 32, 64, 128, 256},
			Contexts: []int{128, 512, 1024, 2048, 4096, 8192, 16384}, MaxBytes: 24 << 30,
		},
		Layer:   layerGrid{Prefill: []int{256, 1024, 2048, 4096, 8192}, Batches: []int{1, 16, 64, 128, 256}, Contexts: []int{1024, 4096}},
		Sharded: layerGrid{Prefill: []int{512, 2048, 8192}, Batches: []int{1, 4, 16, 32, 64, 128, 256}, Contexts: []int{2048}},
	}
	p.Smoke = grid{
		M:                []int{1, 16},
		AttentionPrefill: attentionGrid{Heads: [][2]int{{4, 2}}, Batches: []int{1}, ISL: []int{16}, MaxBytes: 1 << 20},
		AttentionDecode:  attentionGrid{Heads: [][2]int{{4, 2}}, Batches: []int{2}, Contexts: []int{16}, MaxBytes: 1 << 20},
		Layer:            layerGrid{Prefill: []int{8}, Batches: []int{2}, Contexts: []int{16}},
		Sharded:          layerGrid{Prefill: []int{16}, Batches: []int{2}, Contexts: []int{16}},
	}
	return p, nil
}

// linearShapes are perf's per-layer GEMMs and lm_head on one of tp ranks.
func linearShapes(m perf.Model, tp int) []gemm {
	var out []gemm
	for _, s := range m.LinearShapes(tp) {
		out = append(out, gemm{Model: m.Name, TP: tp, Name: s.Name, N: s.N, K: s.K})
	}
	return out
}

// addSharded adds each "model:tp" as one rank's decoder layer, and the
// W8A8 GEMMs of the FP8 ones at their shapes and at the grid points.
func addSharded(p *plan, args []string) error {
	fp8Seen := map[[2]int]bool{}
	for _, arg := range args {
		name, tpText, ok := strings.Cut(arg, ":")
		tp, err := strconv.Atoi(tpText)
		if !ok || err != nil || tp < 1 {
			return fmt.Errorf("-sharded-layers %q: want model:tp, such as Llama-3.1-70B:4", arg)
		}
		m, err := perf.LookupModel(name)
		if err != nil {
			return fmt.Errorf("-sharded-layers: %w", err)
		}
		if m.IsMoE() || m.IsMLA() || m.HeadDim != 128 || m.Heads%tp != 0 || m.Intermediate%tp != 0 {
			return fmt.Errorf("-sharded-layers %s: only dense grouped-query models with head_dim 128 whose heads and MLP split %d ways", arg, tp)
		}
		q := m.Quantization
		if q.Method != "" && q.Method != "fp8" {
			return fmt.Errorf("-sharded-layers %s: %s checkpoints are not measured (bf16 and fp8 only)", arg, q.Method)
		}
		l := layerModel{
			Name: m.Name, Layers: m.Layers, Hidden: m.Hidden, Heads: m.Heads / tp, KVHeads: max(m.KVHeads/tp, 1),
			HeadDim: m.HeadDim, Intermediate: m.Intermediate / tp, Vocab: m.Vocab, QKNorm: m.QKNorm, TP: tp,
			// A middle layer: the checkpoint's skipped MLPs are its first and last.
			MLPFP8:       q.Method == "fp8" && q.SkippedMLPLayers < m.Layers,
			AttentionFP8: q.Method == "fp8" && q.SkippedAttentionLayers < m.Layers,
		}
		p.Sharded = append(p.Sharded, l)
		for _, s := range m.LinearShapes(tp) {
			isMLP := s.Name == "gate_up_proj" || s.Name == "down_proj"
			isAttention := s.Name == "qkv_proj" || s.Name == "o_proj"
			if (isMLP && l.MLPFP8) || (isAttention && l.AttentionFP8) {
				if !fp8Seen[[2]int{s.N, s.K}] {
					fp8Seen[[2]int{s.N, s.K}] = true
					p.FP8GEMMs = append(p.FP8GEMMs, gemm{Model: m.Name, TP: tp, Name: s.Name, N: s.N, K: s.K})
				}
			}
		}
	}
	if len(p.FP8GEMMs) > 0 {
		for _, n := range tableNK {
			for _, k := range tableNK {
				p.FP8GEMMs = append(p.FP8GEMMs, gemm{Model: "grid", TP: 1, Name: "grid", N: n, K: k})
			}
		}
	}
	return nil
}
