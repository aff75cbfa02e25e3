package main

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// vidurSource is a checkout of github.com/microsoft/vidur (MIT): its
// profiling data, per-operator CUDA times of real models by token count and
// tensor-parallel size on A100, H100 and A40, and collectives.
type vidurSource struct {
	root, commit string
}

// vidurModels are the profiled models, with the shapes vidur's profiler
// built their operators from (the CSV's own n_head, n_kv_head, n_embd,
// n_expanded_embd and use_gated_mlp columns say the same).
var vidurModels = []string{
	"meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-70b-hf", "codellama/CodeLlama-34b-Instruct-hf",
	"internlm/internlm-20b", "Qwen/Qwen-72B", "microsoft/phi-2",
}

// gemmOp is one of vidur's linear operators and its GEMM shape.
type gemmOp struct {
	name string
	n, k float64
}

func vidurGEMMs(r map[string]string) []gemmOp {
	h, kv, d, f := num(r["n_head"]), num(r["n_kv_head"]), num(r["n_embd"]), num(r["n_expanded_embd"])
	t := num(r["num_tensor_parallel_workers"])
	hd := d / h
	up := f
	if r["use_gated_mlp"] == "True" {
		up = 2 * f
	}
	return []gemmOp{
		{"attn_pre_proj", (h/t + 2*math.Max(kv/t, 1)) * hd, d},
		{"attn_post_proj", d, h * hd / t},
		{"mlp_up_proj", up / t, d},
		{"mlp_down_proj", d, f / t},
	}
}

// A40's GEMM table is two-dimensional, (M, N·K): vidur measured a few
// dozen (N, K) shapes, not a grid. Each sample is scaled to its power-of-
// two N·K bin (time ∝ N·K at a fixed M, whether bound by the weight read or
// by FLOPs) and a cell is the median of its samples.
var (
	a40M = floats(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
	a40W = powersOfTwo(1<<21, 1<<29)
)

func (v vidurSource) readCSV(rel string) ([]map[string]string, error) {
	f, err := os.Open(filepath.Join(v.root, rel))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	var out []map[string]string
	for _, rec := range recs[1:] {
		m := make(map[string]string, len(rec))
		for i, c := range recs[0] {
			m[c] = rec[i]
		}
		out = append(out, m)
	}
	return out, nil
}

func (v vidurSource) writeAll(out, figures string) error {
	if err := v.writeA40(out); err != nil {
		return err
	}
	if err := v.writeElementwise(out); err != nil {
		return err
	}
	if err := v.writeGEMMFigures(figures); err != nil {
		return err
	}
	if err := v.writeElementwiseFigures(figures); err != nil {
		return err
	}
	return v.writeNetworkFigures(figures)
}

func (v vidurSource) writeA40(out string) error {
	cells := map[[2]float64][]float64{}
	for _, model := range vidurModels {
		rel := filepath.Join("data/profiling/compute/a40", model, "mlp.csv")
		rows, err := v.readCSV(rel)
		if err != nil {
			return err
		}
		for _, r := range rows {
			m := num(r["num_tokens"])
			if !slices.Contains(a40M, m) {
				continue
			}
			for _, op := range vidurGEMMs(r) {
				w := op.n * op.k
				bin := math.Exp2(math.Round(math.Log2(w)))
				if bin < a40W[0] || bin > a40W[len(a40W)-1] {
					continue
				}
				ms := num(r["time_stats."+op.name+".median"])
				cells[[2]float64{m, bin}] = append(cells[[2]float64{m, bin}], 1000*ms*bin/w)
			}
		}
	}
	g := newGrid(axis{"m", a40M}, axis{"nk", a40W})
	for key, vs := range cells {
		slices.Sort(vs)
		g.set(key[:], vs[len(vs)/2])
	}
	changed := g.envelope()
	return table{
		file: "gemm-a40-bf16.txt",
		header: [][2]string{
			{"kind", "gemm-nk"}, {"gpu", "A40"}, {"device", "NVIDIA A40"},
			{"source", fmt.Sprintf("github.com/microsoft/vidur@%s data/profiling/compute/a40/*/mlp.csv (%d models)", v.commit, len(vidurModels))},
			{"license", "MIT (Microsoft Corporation; see NOTICE beside this file)"},
			{"select", "time_stats.{attn_pre_proj,attn_post_proj,mlp_up_proj,mlp_down_proj}.median at num_tokens = M, all TP sizes; fp16"},
			{"unit", "microseconds"}, {"dtype", "bf16"},
			{"reduction", "each sample scaled to its power-of-two N*K bin (time proportional to N*K at fixed M); a cell is the median of its samples"},
			{"cleaning", fmt.Sprintf("monotone envelope: %d of %d cells took a larger GEMM's lower time", changed, g.measured())},
		},
		grid: g,
	}.write(out)
}

// writeGEMMFigures keeps vidur's measured linear-operator times of every
// profiled model at every tensor-parallel size on A100 and H100, at the
// grid's token counts: the tests check aiconfigurator's tables against them,
// and perf's in-model GEMM factor is their ratio to those tables.
func (v vidurSource) writeGEMMFigures(dir string) error {
	var rows [][]string
	for _, gpu := range []string{"a100", "h100"} {
		for _, model := range vidurModels {
			rel := filepath.Join("data/profiling/compute", gpu, model, "mlp.csv")
			recs, err := v.readCSV(rel)
			if err != nil {
				return err
			}
			for _, r := range recs {
				if !slices.Contains(a40M, num(r["num_tokens"])) {
					continue
				}
				for _, op := range vidurGEMMs(r) {
					rows = append(rows, []string{gpu, model, r["num_tensor_parallel_workers"], op.name, r["num_tokens"], fmtNum(op.n), fmtNum(op.k),
						fmtNum(1000 * num(r["time_stats."+op.name+".median"]))})
				}
			}
		}
	}
	return writeTSV(filepath.Join(dir, "vidur-gemm.tsv"), []string{
		"Linear-operator CUDA times measured by Vidur's profiler (median of its repetitions), fp16, inside each model's layer.",
		fmt.Sprintf("Source: github.com/microsoft/vidur@%s data/profiling/compute/{a100,h100}/*/*/mlp.csv (%d models, every TP size)", v.commit, len(vidurModels)),
		"License: MIT, Copyright (c) Microsoft Corporation. Figures only. Generated by tools/kernel-tables.",
	}, []string{"gpu", "model", "tp", "op", "m", "n", "k", "us"}, rows)
}

// writeNetworkFigures keeps vidur's all-reduce and send/recv medians at
// sizes near powers of two.
func (v vidurSource) writeNetworkFigures(dir string) error {
	var rows [][]string
	for _, c := range []struct{ system, op string }{
		{"h100_dgx", "all_reduce"}, {"a100_dgx", "all_reduce"}, {"a100_pairwise_nvlink", "all_reduce"},
		{"h100_pairwise_nvlink", "all_reduce"}, {"h100_dgx", "send_recv"}, {"a100_dgx", "send_recv"}, {"a40_pairwise_nvlink", "send_recv"},
	} {
		recs, err := v.readCSV(filepath.Join("data/profiling/network", c.system, c.op+".csv"))
		if err != nil {
			return err
		}
		type key struct{ ranks, perNode string }
		sizes := map[key][]float64{}
		for _, r := range recs {
			k := key{r["num_workers"], r["devices_per_node"]}
			sizes[k] = append(sizes[k], num(r["size"]))
		}
		keep := map[key]map[float64]bool{}
		for k, ss := range sizes {
			keep[k] = map[float64]bool{}
			for p := 12.0; p <= 30; p++ {
				best := ss[0]
				for _, s := range ss {
					if math.Abs(math.Log2(s)-p) < math.Abs(math.Log2(best)-p) {
						best = s
					}
				}
				if math.Abs(math.Log2(best)-p) < 0.1 {
					keep[k][best] = true
				}
			}
		}
		for _, r := range recs {
			k := key{r["num_workers"], r["devices_per_node"]}
			if !keep[k][num(r["size"])] {
				continue
			}
			rows = append(rows, []string{c.system, c.op, r["num_workers"], r["devices_per_node"],
				fmtNum(num(r["size"])), fmtNum(1000 * num(r["time_stats."+c.op+".median"]))})
		}
	}
	return writeTSV(filepath.Join(dir, "vidur-network.tsv"), []string{
		"Collective times measured by Vidur's profiler: torch.distributed (NCCL) on fp16 buffers, replayed from CUDA graphs; median.",
		fmt.Sprintf("Source: github.com/microsoft/vidur@%s data/profiling/network/*/{all_reduce,send_recv}.csv.", v.commit),
		"bytes = the CSV's size column. Read as fp16 elements, H100's 8-rank all-reduce of the largest size would reach a bus bandwidth of 729 GB/s, above NVLink 4's 450 GB/s per direction; read as bytes, 364 GB/s [inferred: the profiled size is bytes].",
		"per_node = devices_per_node: ranks / per_node nodes. License: MIT, Copyright (c) Microsoft Corporation. Figures only.",
	}, []string{"system", "op", "ranks", "per_node", "bytes", "us"}, rows)
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
