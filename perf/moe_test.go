package perf

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestMoEConfigsMatchCatalog: config.json files shaped like the published
// ones parse to the same architecture as the catalog entry, MoE and MLA
// included (before MoE support they parsed as dense models of a fraction
// of the size).
func TestMoEConfigsMatchCatalog(t *testing.T) {
	tests := []struct {
		dir, catalog string
		totalB       float64 // model card, billions
		activeB      float64 // model card, billions (embedding + active linear + lm_head)
	}{
		{"Mixtral-8x7B-v0.1", "Mixtral-8x7B", 46.7, 12.9},
		{"Qwen1.5-MoE-A2.7B", "Qwen1.5-MoE-A2.7B", 14.3, 2.7},
		{"Qwen3-30B-A3B", "Qwen3-30B-A3B", 30.5, 3.3},
		{"DeepSeek-V2-Lite", "DeepSeek-V2-Lite", 15.7, 2.4},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			got, err := LookupModel(filepath.Join("testdata", "moe", tt.dir))
			if err != nil {
				t.Fatal(err)
			}
			want, err := LookupModel(tt.catalog)
			if err != nil {
				t.Fatal(err)
			}
			got.Name, want.Name = "", ""
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(Model{})); diff != "" {
				t.Errorf("config.json differs from the catalog (-catalog +config):\n%s", diff)
			}
			total := float64(got.Params()) / 1e9
			active := float64(got.ActiveLinearParams()+got.EmbeddingParams()*2) / 1e9
			// DeepSeek's card counts the active parameters without the
			// input embedding (2.45 B that way), hence 12%.
			if math.Abs(total-tt.totalB) > 0.01*tt.totalB || math.Abs(active-tt.activeB) > 0.12*tt.activeB {
				t.Errorf("params total %.2f B, active %.2f B; model card %.1f B, %.1f B", total, active, tt.totalB, tt.activeB)
			}
		})
	}
}

func TestParseMoEKeys(t *testing.T) {
	tests := []struct {
		name string
		json string
		moe  MoE
		mla  MLA
	}{
		{"DeepSeek-V3 shape", `{"num_hidden_layers": 8, "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 4,
			"intermediate_size": 1024, "vocab_size": 1000, "max_position_embeddings": 4096, "torch_dtype": "bfloat16",
			"n_routed_experts": 16, "n_shared_experts": 1, "num_experts_per_tok": 4, "moe_intermediate_size": 128,
			"first_k_dense_replace": 3, "moe_layer_freq": 1, "kv_lora_rank": 64, "q_lora_rank": 96,
			"qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32,
			"quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}}`,
			MoE{Experts: 16, ExpertsPerToken: 4, ExpertIntermediate: 128, SharedIntermediate: 128, DenseLayers: 3},
			MLA{KVLoraRank: 64, QLoraRank: 96, QKNopeHeadDim: 32, QKRopeHeadDim: 16, VHeadDim: 32}},
		{"Qwen2-MoE sparse step and mlp-only layers", `{"num_hidden_layers": 8, "hidden_size": 256, "num_attention_heads": 4,
			"intermediate_size": 1024, "vocab_size": 1000, "torch_dtype": "bfloat16",
			"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64, "shared_expert_intermediate_size": 256,
			"decoder_sparse_step": 2, "mlp_only_layers": [1]}`,
			// Layers 1, 3, 5, 7 are MoE by the step; 1 is forced dense.
			MoE{Experts: 8, ExpertsPerToken: 2, ExpertIntermediate: 64, SharedIntermediate: 256, DenseLayers: 5}, MLA{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseModelConfig([]byte(tt.json), "config.json")
			if err != nil {
				t.Fatal(err)
			}
			if m.MoE != tt.moe || m.MLA != tt.mla {
				t.Errorf("MoE %+v MLA %+v; want %+v %+v", m.MoE, m.MLA, tt.moe, tt.mla)
			}
		})
	}
	bad := map[string]string{
		"experts without top-k": `{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "num_local_experts": 8}`,
		"top-k above experts":   `{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "num_local_experts": 8, "num_experts_per_tok": 9}`,
		"MLA without rope dim":  `{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "kv_lora_rank": 32, "qk_nope_head_dim": 16, "v_head_dim": 16}`,
	}
	for name, js := range bad {
		if _, err := ParseModelConfig([]byte(js), "config.json"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Memory is sized by all experts, and expert parallelism places whole
// experts: with 60 experts on 8 ranks the busiest rank holds 8.
func TestMoEWeightsAndExpertParallel(t *testing.T) {
	mixtral := deployment(t, "Mixtral-8x7B", "H100", func(d *Deployment) { d.TensorParallel = 2 })
	c, err := mixtral.Capacity()
	if err != nil {
		t.Fatal(err)
	}
	if want := float64(mixtral.Model.WeightBytes()) / 2; math.Abs(float64(c.WeightBytes)-want) > 1 {
		t.Errorf("Mixtral TP=2 weights/GPU %.2f GiB, want half of %.2f GiB", float64(c.WeightBytes)/gib, float64(mixtral.Model.WeightBytes())/gib)
	}
	ep := mixtral
	ep.ExpertParallel = true
	cEP, err := ep.Capacity()
	if err != nil {
		t.Fatal(err)
	}
	if cEP.WeightBytes != c.WeightBytes {
		t.Errorf("8 experts on 2 ranks: EP weights %d != TP weights %d", cEP.WeightBytes, c.WeightBytes)
	}

	qwen := deployment(t, "Qwen1.5-MoE-A2.7B", "H100", func(d *Deployment) { d.TensorParallel = 8 })
	tp, err := qwen.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	qwen.ExpertParallel = true
	epd, err := qwen.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	extra := float64(epd.weightBytesPerGPU() - tp.weightBytesPerGPU())
	// ceil(60/8) − 60/8 = 0.5 expert per MoE layer, 24 layers, bf16.
	want := 0.5 * 24 * float64(tp.Model.routedExpertParams()) * 2
	if math.Abs(extra-want) > 2 {
		t.Errorf("EP adds %.0f bytes on the busiest rank, want %.0f", extra, want)
	}
}

// MLA caches one latent of kv_lora_rank + qk_rope_head_dim per token and
// layer, which every TP rank holds whole.
func TestMLAKVCache(t *testing.T) {
	for _, tp := range []int{1, 2, 4} {
		d, err := deployment(t, "DeepSeek-V2-Lite", "H100", func(d *Deployment) { d.TensorParallel = tp }).Resolve()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := d.kvBytesPerTokenPerGPU(), int64(27*(512+64)*2); got != want {
			t.Errorf("TP=%d: KV bytes/token/GPU %d, want %d", tp, got, want)
		}
	}
	// A dense model of the same shape would cache 2·16·128 per layer.
	if m := mustModel(t, "DeepSeek-V2-Lite"); m.KVBytesPerToken("fp8") != 27*576 {
		t.Errorf("fp8 KV bytes/token %d, want %d", m.KVBytesPerToken("fp8"), 27*576)
	}
}

// Decode reads the experts its tokens are routed to: E·(1−(1−k/E)^B).
func TestMoEDecodeReadsTouchedExperts(t *testing.T) {
	d := deployment(t, "Mixtral-8x7B", "H100", func(d *Deployment) { d.TensorParallel = 2; d.NoKernelTables = true })
	r, err := NewRoofline(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		batch int
		want  float64
	}{{1, 2}, {2, 8 * (1 - 0.75*0.75)}, {64, 8 * (1 - math.Pow(0.75, 64))}} {
		if got := r.touchedExperts(float64(tt.batch)); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("batch %d touches %.4f experts, want %.4f", tt.batch, got, tt.want)
		}
	}
	m := d.Model
	bw := d.GPU.MemoryBandwidth * d.GPU.MBU
	weightsRead := func(experts float64) time.Duration {
		static := float64(m.LinearParams()-m.RoutedExpertParams()) * 2 / 2
		expert := float64(m.moeLayers()) * float64(m.routedExpertParams()) * 2 / 2
		return time.Duration((static + experts*expert) / bw * 1e9)
	}
	one := r.Breakdown(StepShape{Decodes: 1, KVTokens: 1})
	// One sequence reads 2 of 8 experts (plus the lm_head and one KV entry).
	if lo, hi := weightsRead(2), weightsRead(2.1); one.Memory < lo || one.Memory > hi {
		t.Errorf("batch-1 decode memory time %v, want %v–%v (2 of 8 experts)", one.Memory, lo, hi)
	}
	many := r.Breakdown(StepShape{Decodes: 256, KVTokens: 256})
	if lo := weightsRead(8); many.Memory < lo {
		t.Errorf("batch-256 decode memory time %v, want ≥ %v (all experts)", many.Memory, lo)
	}
	// Compute follows the active parameters: 2·N_active/t FLOPs a token.
	// At 8192 tokens the GEMM token curve is saturated: the family's rate.
	perToken := 2 * float64(m.ActiveLinearParams()) / 2 / (d.GPU.BF16FLOPS * efficiencyFor(d.GPU, m, KernelDense).prefill)
	prefill := r.Breakdown(StepShape{PrefillTokens: 8192, Prefills: 1})
	if want := time.Duration(8192 * perToken * 1e9); prefill.Compute < want || prefill.Compute > want*13/10 {
		t.Errorf("8192-token prefill compute %v, want %v plus attention and lm_head", prefill.Compute, want)
	}
}
