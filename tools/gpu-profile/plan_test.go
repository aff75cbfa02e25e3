package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestPlanShapes(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"shapes", "-models", "Llama-3.1-8B,Llama-3.1-70B", "-layer-models", "Qwen3-8B", "-tp", "1,2,4",
		"-sharded-layers", "Llama-3.1-70B:4,../../vllm/testdata/Llama-3.1-405B-FP8:8"}, &out); err != nil {
		t.Fatal(err)
	}
	var p plan
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	type key struct {
		model string
		tp    int
		name  string
		n, k  int
	}
	index := map[key]bool{}
	for i, g := range p.GEMMs {
		index[key{g.Model, g.TP, g.Name, g.N, g.K}] = true
		if g.Model == "Llama-3.1-70B" && g.TP == 2 && g.Name == "qkv_proj" && i > 10 {
			t.Errorf("70B's smallest fitting TP (2) comes after the grid, at %d: a short lease would cut it", i)
		}
	}
	for _, want := range []key{
		// Llama-3.1-8B: 32 query and 8 KV heads of 128, hidden 4096, MLP 14336.
		{"Llama-3.1-8B", 1, "qkv_proj", 6144, 4096},
		{"Llama-3.1-8B", 1, "down_proj", 4096, 14336},
		{"Llama-3.1-8B", 4, "gate_up_proj", 7168, 4096},
		{"Llama-3.1-8B", 1, "lm_head", 128256, 4096},
		// 70B: 64 query and 8 KV heads, hidden 8192; 141 GB of weights fit
		// from TP 2 on.
		{"Llama-3.1-70B", 2, "qkv_proj", (32 + 2*4) * 128, 8192},
		{"grid", 1, "grid", 16384, 1024},
	} {
		if !index[want] {
			t.Errorf("plan lacks %+v", want)
		}
	}
	for g := range index {
		if g.model == "Llama-3.1-70B" && g.tp == 1 {
			t.Errorf("70B at TP 1 does not fit one 80 GB GPU but is planned: %+v", g)
		}
	}
	if len(p.Models) != 1 || p.Models[0].Name != "Qwen3-8B" || !p.Models[0].QKNorm || p.Models[0].KVHeads != 8 {
		t.Errorf("layer models %+v, want Qwen3-8B with 8 KV heads and q/k norms", p.Models)
	}
	// One rank's slice: 70B at TP 4 keeps 2 of 8 KV heads; the 405B at TP 8
	// keeps one, runs its MLP in FP8 and its attention projections in BF16
	// (Meta's checkpoint skips them).
	wantSharded := []layerModel{
		{Name: "Llama-3.1-70B", Layers: 80, Hidden: 8192, Heads: 16, KVHeads: 2, HeadDim: 128, Intermediate: 7168, Vocab: 128256, TP: 4},
		{Name: "Llama-3.1-405B-FP8", Layers: 126, Hidden: 16384, Heads: 16, KVHeads: 1, HeadDim: 128, Intermediate: 6656, Vocab: 128256, TP: 8, MLPFP8: true},
	}
	if len(p.Sharded) != len(wantSharded) {
		t.Fatalf("sharded layers %+v, want %+v", p.Sharded, wantSharded)
	}
	for i, w := range wantSharded {
		if p.Sharded[i] != w {
			t.Errorf("sharded layer %d = %+v, want %+v", i, p.Sharded[i], w)
		}
	}
	// The FP8 GEMMs: the 405B's MLP slices first, then the 16 grid points.
	if len(p.FP8GEMMs) != 2+16 || p.FP8GEMMs[0] != (gemm{Model: "Llama-3.1-405B-FP8", TP: 8, Name: "gate_up_proj", N: 13312, K: 16384}) ||
		p.FP8GEMMs[1] != (gemm{Model: "Llama-3.1-405B-FP8", TP: 8, Name: "down_proj", N: 16384, K: 6656}) {
		t.Errorf("FP8 GEMMs %+v, want the 405B's gate_up and down slices then the grid", p.FP8GEMMs)
	}
	if len(p.Grid.M) == 0 || p.Grid.M[len(p.Grid.M)-1] != 8192 || len(p.Smoke.M) == 0 {
		t.Errorf("grid M %v, smoke M %v", p.Grid.M, p.Smoke.M)
	}
}

func TestPlanErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "usage: gpu-profile shapes"},
		{[]string{"shapes", "-tp", "0"}, `-tp "0"`},
		{[]string{"shapes", "-models", "No-Such-Model"}, "-models"},
		{[]string{"shapes", "-layer-models", "Mixtral-8x7B"}, "only dense grouped-query models"},
		{[]string{"shapes", "-sharded-layers", "Llama-3.1-70B"}, "want model:tp"},
		{[]string{"shapes", "-sharded-layers", "Llama-3.1-70B:0"}, "want model:tp"},
		{[]string{"shapes", "-sharded-layers", "Llama-3.1-70B:3"}, "split 3 ways"},
		{[]string{"shapes", "-sharded-layers", "Qwen2.5-7B-Instruct-GPTQ-Int4:1"}, "gptq checkpoints are not measured"},
		{[]string{"shapes", "-sharded-layers", "No-Such-Model:2"}, "-sharded-layers"},
	} {
		err := run(tt.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}
