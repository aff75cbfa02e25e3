package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// vLLM's fused MoE kernel (one Triton launch for every expert of a layer,
// or Marlin's MoE kernel for 4-bit weights) measured by aiconfigurator at
// the expert shapes of published MoE models, by tokens in the step and by
// the TP size the experts are sliced across (moe_tp), and, in a table of
// its own, by the EP size whole experts are spread over (moe_ep, with
// moe_tp 1: each rank runs its own experts on every token, as vLLM's
// --enable-expert-parallel does).

// moeTokens are the token counts the sweep measured (every one is kept).
var moeTokens = floats(1, 2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 160, 192, 256, 320, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384)

// moeRanks are the TP (or EP) sizes kept: one node.
var moeRanks = floats(1, 2, 4, 8)

// moeDtypes maps aiconfigurator's moe_dtype to the kernels vLLM runs it
// with and servebench's short name.
var moeDtypes = []struct{ dtype, short string }{
	{"bfloat16", "bf16"}, {"fp8", "fp8"}, {"fp8_block", "fp8-block"}, {"int4_wo", "int4"},
}

// moeKernels are the vLLM kernel sources taken: the Triton fused MoE for
// 16-bit and FP8 weights, Marlin's MoE kernel for 4-bit weights.
var moeKernels = map[string]bool{"vllm_fused_moe": true, "vllm_marlin_moe": true, "vllm_marlin_int4_moe": true}

type moeShape struct{ hidden, inter, topk, experts float64 }

func (s moeShape) String() string {
	return fmt.Sprintf("%gx%gx%gx%g", s.hidden, s.inter, s.topk, s.experts)
}

// moeSplit is how a layer's experts are divided among the ranks of one
// table: sliced (TP) or whole (EP).
type moeSplit struct {
	kind, axis, what string
	// ranks is the row's number of ranks under this split, 0 when the row
	// splits its experts otherwise.
	ranks func(r map[string]string) float64
	// skip are the moe_dtypes not written for this split.
	skip map[string]bool
}

var moeSplits = []moeSplit{
	{"moe", "tp", "experts sliced across TP ranks (moe_tp_size = tp, moe_ep_size 1)", func(r map[string]string) float64 {
		if r["moe_ep_size"] != "1" {
			return 0
		}
		return num(r["moe_tp_size"])
	}, nil},
	{"moe-ep", "ep", "whole experts spread over EP ranks (moe_ep_size = ep, moe_tp_size 1)", func(r map[string]string) float64 {
		if r["moe_tp_size"] != "1" {
			return 0
		}
		return num(r["moe_ep_size"])
	}, map[string]bool{
		// The 4-bit (Marlin) EP sweep covers fewer shapes and token
		// counts, and its table misses its own held-back points by more
		// than 10% for 3 in 10 of them on the H200: a 4-bit EP deployment
		// keeps the TP table.
		"int4_wo": true,
	}},
}

func (a aiconfigurator) writeMoE(out string, g aicGPU) error {
	rel := filepath.Join(g.system, "moe", "vllm", g.vllm, "moe_perf.parquet")
	rows, err := readParquet(filepath.Join(a.root, aicData, rel))
	if err != nil {
		return err
	}
	for _, split := range moeSplits {
		for _, dt := range moeDtypes {
			if split.skip[dt.dtype] {
				continue
			}
			if err := a.writeMoESplit(out, g, rel, rows, split, dt.dtype, dt.short); err != nil {
				return err
			}
		}
	}
	return nil
}

func (a aiconfigurator) writeMoESplit(out string, g aicGPU, rel string, rows []map[string]string, split moeSplit, dtype, short string) error {
	type cell struct {
		shape        moeShape
		ranks, token float64
	}
	cells := map[cell]float64{}
	shapes := map[moeShape]bool{}
	device, kernel := "", ""
	for _, r := range rows {
		if r["moe_dtype"] != dtype || r["distribution"] != "balanced" || !moeKernels[r["kernel_source"]] {
			continue
		}
		ranks := split.ranks(r)
		if !slices.Contains(moeRanks, ranks) || !slices.Contains(moeTokens, num(r["num_tokens"])) {
			continue
		}
		s := moeShape{num(r["hidden_size"]), num(r["inter_size"]), num(r["topk"]), num(r["num_experts"])}
		cells[cell{s, ranks, num(r["num_tokens"])}] = 1000 * num(r["latency"])
		shapes[s] = true
		device, kernel = r["device"], r["kernel_source"]
	}
	if len(cells) == 0 {
		return nil
	}
	// Shapes measured on one rank only, at every token count, so that
	// each shape's row of the table starts from a measurement.
	var list []moeShape
	for s := range shapes {
		complete := true
		for _, t := range moeTokens {
			if _, ok := cells[cell{s, 1, t}]; !ok {
				complete = false
			}
		}
		if complete {
			list = append(list, s)
		}
	}
	slices.SortFunc(list, func(x, y moeShape) int {
		for _, d := range [][2]float64{{x.hidden, y.hidden}, {x.inter, y.inter}, {x.topk, y.topk}, {x.experts, y.experts}} {
			if d[0] != d[1] {
				if d[0] < d[1] {
					return -1
				}
				return 1
			}
		}
		return 0
	})
	index := make([]float64, len(list))
	names := make([]string, len(list))
	for i, s := range list {
		index[i] = float64(i + 1)
		names[i] = s.String()
	}
	grid := newGrid(axis{"shape", index}, axis{split.axis, moeRanks}, axis{"tokens", moeTokens})
	for c, v := range cells {
		if i := slices.Index(list, c.shape); i >= 0 {
			grid.set([]float64{float64(i + 1), c.ranks, c.token}, v)
		}
	}
	// Only the token axis is monotone: more ranks share the work.
	changed := grid.envelopeAlong(2)
	t := table{
		file: fmt.Sprintf("%s-%s-%s.txt", split.kind, fileStem(g.name), short),
		header: append(a.header(split.kind, g.name, rel, device,
			fmt.Sprintf("framework vllm %s, kernel_source %s, moe_dtype %s, distribution balanced; %s", g.vllm, kernel, dtype, split.what)),
			[2]string{"dtype", short},
			[2]string{"shapes", "hidden x inter x topk x experts, by the shape axis: " + strings.Join(names, " ")},
			[2]string{"cleaning", fmt.Sprintf("monotone envelope along tokens: %d of %d cells took a larger step's lower time", changed, grid.measured())}),
		grid: grid,
	}
	return t.write(out)
}
