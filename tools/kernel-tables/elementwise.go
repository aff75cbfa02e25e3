package main

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
)

// Vidur profiled, besides the GEMMs, the small per-layer kernels of its
// models (vLLM's own RMSNorm, rotary embedding and SiLU-and-mul ops) by
// token count and TP size: the time a step spends outside GEMMs and
// attention, which has a floor of a few microseconds per kernel at decode
// batch sizes. Each op's samples are put on one axis, the elements the
// kernel touches (tokens × its width on one GPU), so that another model's
// widths read the same table.

// elementwiseOps are the profiled ops kept, the width (per GPU) each
// works on, and their index on the table's op axis.
var elementwiseOps = []struct {
	name    string
	columns []string // vidur's time_stats columns of the op
	width   func(r map[string]string) float64
}{
	{"rmsnorm", []string{"input_layernorm", "post_attention_layernorm"}, func(r map[string]string) float64 { return num(r["n_embd"]) }},
	{"rope", []string{"attn_rope"}, func(r map[string]string) float64 {
		h, kv, d, t := num(r["n_head"]), num(r["n_kv_head"]), num(r["n_embd"]), num(r["num_tensor_parallel_workers"])
		return (h/t + math.Max(kv/t, 1)) * d / h
	}},
	{"silu_and_mul", []string{"mlp_act"}, func(r map[string]string) float64 {
		return num(r["n_expanded_embd"]) / num(r["num_tensor_parallel_workers"])
	}},
}

// elementwiseGPUs are vidur's compute profiles and the catalog GPU each is.
var elementwiseGPUs = []struct{ dir, gpu, device string }{
	{"h100", "H100-SXM", "NVIDIA H100 80GB HBM3"}, {"a100", "A100-80GB", "NVIDIA A100-SXM4-80GB"}, {"a40", "A40", "NVIDIA A40"},
}

func (v vidurSource) writeElementwise(out string) error {
	for _, g := range elementwiseGPUs {
		samples := make([]map[float64][]float64, len(elementwiseOps))
		for i := range samples {
			samples[i] = map[float64][]float64{}
		}
		var models []string
		for _, model := range vidurModels {
			rows, err := v.readCSV(filepath.Join("data/profiling/compute", g.dir, model, "mlp.csv"))
			if err != nil {
				continue // not every model was profiled on every GPU
			}
			models = append(models, model)
			for _, r := range rows {
				for i, op := range elementwiseOps {
					e := num(r["num_tokens"]) * op.width(r)
					bin := math.Exp2(math.Round(math.Log2(e)))
					for _, c := range op.columns {
						if ms := num(r["time_stats."+c+".median"]); ms > 0 {
							samples[i][bin] = append(samples[i][bin], 1000*ms*bin/e)
						}
					}
				}
			}
		}
		// The element range every op was measured over.
		lo, hi := 0.0, math.Inf(1)
		for _, s := range samples {
			var bins []float64
			for b := range s {
				bins = append(bins, b)
			}
			slices.Sort(bins)
			lo, hi = math.Max(lo, bins[0]), math.Min(hi, bins[len(bins)-1])
		}
		elements := powersOfTwo(lo, hi)
		ops := make([]float64, len(elementwiseOps))
		names := make([]string, len(elementwiseOps))
		for i, op := range elementwiseOps {
			ops[i], names[i] = float64(i+1), op.name
		}
		grid := newGrid(axis{"op", ops}, axis{"elements", elements})
		for i, s := range samples {
			for b, vs := range s {
				slices.Sort(vs)
				grid.set([]float64{float64(i + 1), b}, vs[len(vs)/2])
			}
		}
		changed := grid.envelopeAlong(1)
		err := table{
			file: "elementwise-" + fileStem(g.gpu) + ".txt",
			header: [][2]string{
				{"kind", "elementwise"}, {"gpu", g.gpu}, {"device", g.device},
				{"source", fmt.Sprintf("github.com/microsoft/vidur@%s data/profiling/compute/%s/*/mlp.csv (%s)", v.commit, g.dir, strings.Join(models, ", "))},
				{"license", "MIT (Microsoft Corporation; see NOTICE beside this file)"},
				{"select", "time_stats.{input_layernorm,post_attention_layernorm} (rmsnorm), attn_rope (rope, q and k heads per GPU x head dim), mlp_act (silu_and_mul, intermediate per GPU) .median, all token counts and TP sizes; fp16"},
				{"unit", "microseconds"},
				{"ops", "by the op axis: " + strings.Join(names, " ")},
				{"reduction", "elements = num_tokens x the op's width on one GPU; each sample scaled to its power-of-two bin (time proportional to elements); a cell is the median of its samples"},
				{"cleaning", fmt.Sprintf("monotone envelope along elements: %d of %d cells took a larger kernel's lower time", changed, grid.measured())},
			},
			grid: grid,
		}.write(out)
		if err != nil {
			return err
		}
	}
	return nil
}

// writeElementwiseFigures keeps vidur's per-layer small-kernel times of
// Llama-2-7B (TP 1) and Llama-2-70B (TP 4) on every profiled GPU, against
// which the tests check the reduced tables.
func (v vidurSource) writeElementwiseFigures(dir string) error {
	var rows [][]string
	for _, g := range elementwiseGPUs {
		for _, c := range []struct{ model, tp string }{{"meta-llama/Llama-2-7b-hf", "1"}, {"meta-llama/Llama-2-70b-hf", "4"}} {
			recs, err := v.readCSV(filepath.Join("data/profiling/compute", g.dir, c.model, "mlp.csv"))
			if err != nil {
				return err
			}
			for _, r := range recs {
				if r["num_tensor_parallel_workers"] != c.tp || !slices.Contains(a40M, num(r["num_tokens"])) {
					continue
				}
				for _, op := range elementwiseOps {
					us := 0.0
					for _, col := range op.columns {
						us += 1000 * num(r["time_stats."+col+".median"])
					}
					rows = append(rows, []string{g.gpu, c.model, c.tp, r["num_tokens"], op.name, fmtNum(us)})
				}
			}
		}
	}
	return writeTSV(filepath.Join(dir, "vidur-elementwise.tsv"), []string{
		"Per-layer small-kernel CUDA times measured by Vidur's profiler (sum of the op's kernels, median of its repetitions), fp16.",
		fmt.Sprintf("Source: github.com/microsoft/vidur@%s data/profiling/compute/{h100,a100,a40}/meta-llama/Llama-2-{7b,70b}-hf/mlp.csv", v.commit),
		"rmsnorm = input_layernorm + post_attention_layernorm; rope = attn_rope; silu_and_mul = mlp_act.",
		"License: MIT, Copyright (c) Microsoft Corporation. Figures only. Generated by tools/kernel-tables.",
	}, []string{"gpu", "model", "tp", "tokens", "op", "us"}, rows)
}
