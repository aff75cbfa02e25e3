package perf

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustModel(t testing.TB, name string) Model {
	t.Helper()
	m, err := LookupModel(name)
	if err != nil {
		t.Fatalf("LookupModel(%q): %v", name, err)
	}
	return m
}

func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

// The reference table (vllm-engine.md D) gives parameters and KV/token.
func TestModelCatalogNumbers(t *testing.T) {
	tests := []struct {
		name       string
		params     float64
		kvPerToken int64
		bf16GB     float64
	}{
		{"Qwen2-0.5B", 0.494e9, 12 << 10, 0.99},
		{"Qwen2-7B", 7.62e9, 56 << 10, 15.2},
		{"Qwen2.5-7B", 7.62e9, 56 << 10, 15.2},
		{"Llama-3-8B", 8.03e9, 128 << 10, 16.1},
		{"Llama-3-70B", 70.6e9, 320 << 10, 141},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustModel(t, tt.name)
			if got := float64(m.Params()); !within(got, tt.params, 0.02) {
				t.Errorf("Params() = %.4g, want %.4g ±2%%", got, tt.params)
			}
			if got := m.KVBytesPerToken("auto"); got != tt.kvPerToken {
				t.Errorf("KVBytesPerToken(auto) = %d, want %d", got, tt.kvPerToken)
			}
			if got := m.KVBytesPerToken("fp8"); got != tt.kvPerToken/2 {
				t.Errorf("KVBytesPerToken(fp8) = %d, want %d", got, tt.kvPerToken/2)
			}
			if got := float64(m.WeightBytes()) / 1e9; !within(got, tt.bf16GB, 0.02) {
				t.Errorf("WeightBytes() = %.3f GB, want %.3g GB ±2%%", got, tt.bf16GB)
			}
		})
	}
}

func TestQwen2SmallLMHeadShare(t *testing.T) {
	// Reference D: the (tied) lm_head is 28% of Qwen2-0.5B's parameters.
	m := mustModel(t, "Qwen2-0.5B")
	if share := float64(m.EmbeddingParams()) / float64(m.Params()); math.Abs(share-0.28) > 0.005 {
		t.Errorf("lm_head share = %.3f, want 0.28", share)
	}
}

func TestGPTQWeightBytes(t *testing.T) {
	// Reference D: 6.53 B linear × 0.5 B = 3.26 GB + ≈0.13 GB scales/zeros
	// + 2.18 GB fp16 embedding and lm_head ≈ 5.6 GB.
	m := mustModel(t, "Qwen2.5-7B-Instruct-GPTQ-Int4")
	if got := float64(m.LinearParams()) / 1e9; !within(got, 6.53, 0.01) {
		t.Errorf("LinearParams = %.3f B, want 6.53 B", got)
	}
	if got := float64(m.WeightBytes()) / 1e9; !within(got, 5.6, 0.02) {
		t.Errorf("WeightBytes = %.3f GB, want 5.6 GB ±2%%", got)
	}
	bf16 := mustModel(t, "Qwen2.5-7B-Instruct")
	if m.Params() != bf16.Params() {
		t.Errorf("GPTQ params %d differ from bf16 params %d", m.Params(), bf16.Params())
	}
	fp8 := bf16
	fp8.Quantization = Quantization{Method: "fp8"}
	if got, want := fp8.WeightBytes(), bf16.LinearParams()+bf16.embeddingAndHeadBytes(); got != want {
		t.Errorf("fp8 WeightBytes = %d, want %d (1 byte linear + 16-bit vocab)", got, want)
	}
}

func TestLookupModelNames(t *testing.T) {
	tests := []struct{ query, want string }{
		{"Qwen2-7B", "Qwen2-7B"},
		{"qwen/qwen2-7b", "Qwen2-7B"},
		{"Qwen/Qwen2-7B-Instruct", "Qwen2-7B-Instruct"},
		{"QWEN2.5-7B-INSTRUCT-GPTQ-INT4", "Qwen2.5-7B-Instruct-GPTQ-Int4"},
		{"Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "Qwen2.5-7B-Instruct-GPTQ-Int4"},
		{"meta-llama/Meta-Llama-3-8B", "Llama-3-8B"},
		{"meta-llama/Meta-Llama-3-8B-Instruct", "Llama-3-8B"},
		{"meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B"},
		{"meta-llama/Meta-Llama-3.1-8B-Instruct", "Llama-3.1-8B"},
		{"llama-3-70b", "Llama-3-70B"},
		{"meta_llama/llama_3_70b", "Llama-3-70B"},
		{"Llama-3-8", ""},
		{"", ""},
		{"  Qwen2-0.5B  ", "Qwen2-0.5B"},
	}
	for _, tt := range tests {
		m, err := LookupModel(tt.query)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("LookupModel(%q) = %s, want an error", tt.query, m.Name)
		case tt.want != "" && err != nil:
			t.Errorf("LookupModel(%q): %v", tt.query, err)
		case tt.want != "" && m.Name != tt.want:
			t.Errorf("LookupModel(%q) = %s, want %s", tt.query, m.Name, tt.want)
		}
	}
	if got := mustModel(t, "Llama-3-8B").MaxPositionEmbeddings; got != 8192 {
		t.Errorf("Llama-3-8B max_position_embeddings = %d, want 8192", got)
	}
	if got := mustModel(t, "Llama-3.1-8B").DerivedMaxModelLen(); got != 131072 {
		t.Errorf("Llama-3.1-8B derived max len = %d, want 131072 (llama3 rope is not multiplied)", got)
	}
}

func TestLookupModelUnknown(t *testing.T) {
	_, err := LookupModel("mistralai/Mistral-7B-v0.1")
	if err == nil {
		t.Fatal("want an error for an unknown model")
	}
	msg := err.Error()
	for _, want := range append(Models(), `"mistralai/Mistral-7B-v0.1"`, "config.json") {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error %q spans several lines", msg)
	}
	_, err = LookupModel("/no/such/dir/config.json")
	if err == nil || !strings.Contains(err.Error(), "/no/such/dir/config.json") || strings.Contains(err.Error(), "known models") {
		t.Errorf("missing config path: got %v, want a not-found error naming the path", err)
	}
}

// Reading a checkpoint's config.json must give the catalog's architecture.
func TestLookupModelFromConfig(t *testing.T) {
	tests := []struct {
		path, catalog string
		maxLen        int
	}{
		{"testdata/qwen2-7b/config.json", "Qwen2-7B", 131072},
		{"testdata/qwen2-7b", "Qwen2-7B", 131072}, // a directory holding config.json
		{"testdata/qwen2.5-7b-instruct-gptq-int4/config.json", "Qwen2.5-7B-Instruct-GPTQ-Int4", 32768},
		{"testdata/llama-3.1-8b-instruct", "Llama-3.1-8B", 131072},
		{"testdata/qwen2.5-7b-instruct-yarn", "Qwen2.5-7B-Instruct", 131072},
	}
	ignore := cmp.Options{cmp.AllowUnexported(Model{}), cmp.FilterPath(func(p cmp.Path) bool {
		switch p.Last().String() {
		case ".Name", ".MaxPositionEmbeddings", ".ropeFactor", ".modelMaxLength":
			return true
		}
		return false
	}, cmp.Ignore())}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := LookupModel(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			want := mustModel(t, tt.catalog)
			if diff := cmp.Diff(want, got, ignore); diff != "" {
				t.Errorf("architecture differs from catalog %s (-want +got):\n%s", tt.catalog, diff)
			}
			if got.DerivedMaxModelLen() != tt.maxLen {
				t.Errorf("DerivedMaxModelLen = %d, want %d", got.DerivedMaxModelLen(), tt.maxLen)
			}
			if got.Name != filepath.Base(filepath.Dir(filepath.Join(tt.path, "x"))) && got.Name != filepath.Base(filepath.Dir(tt.path)) {
				t.Errorf("Name = %q, want the checkpoint directory's name", got.Name)
			}
		})
	}
}

func TestParseModelConfigErrors(t *testing.T) {
	base := `"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 1000`
	tests := []struct {
		name, json, want string
	}{
		{"not json", `{`, "not valid JSON"},
		{"missing layers", `{"hidden_size": 64}`, "num_hidden_layers is missing"},
		{"missing vocab", `{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128}`, "vocab_size is missing"},
		{"string layers", `{"num_hidden_layers": "2"}`, `field "num_hidden_layers" has a string`},
		{"fractional", `{"num_hidden_layers": 2.5}`, `"num_hidden_layers"`},
		{"zero layers", `{` + strings.Replace(base, `"num_hidden_layers": 2`, `"num_hidden_layers": 0`, 1) + `}`, "num_hidden_layers is 0"},
		{"heads do not divide hidden", `{` + strings.Replace(base, `"num_attention_heads": 4`, `"num_attention_heads": 5`, 1) + `}`, "add head_dim"},
		{"kv heads", `{` + base + `, "num_key_value_heads": 3}`, "not a multiple of num_key_value_heads"},
		{"dtype", `{` + base + `, "torch_dtype": "int8"}`, `torch_dtype "int8"`},
		{"quant method", `{` + base + `, "torch_dtype": "float16", "quantization_config": {"quant_method": "bitsandbytes"}}`, `"bitsandbytes" is not modelled`},
		{"gptq bits", `{` + base + `, "torch_dtype": "float16", "quantization_config": {"quant_method": "gptq", "bits": 3, "group_size": 128}}`, "bits is 3"},
		{"gptq group", `{` + base + `, "torch_dtype": "float16", "quantization_config": {"quant_method": "gptq", "bits": 4}}`, "group_size is 0"},
		{"rope without factor", `{` + base + `, "torch_dtype": "bfloat16", "rope_scaling": {"type": "linear"}}`, "has no factor"},
		{"huge vocab", `{` + strings.Replace(base, `"vocab_size": 1000`, `"vocab_size": 100000000`, 1) + `}`, "vocab_size is 100000000"},
		{"part of a fused block skipped", `{` + base + `, "torch_dtype": "bfloat16", "quantization_config": {"quant_method": "fbgemm_fp8", "modules_to_not_convert": ["model.layers.1.self_attn.q_proj"]}}`, "leaves 1 of layer 1's 4 self_attn projections"},
		{"moe mlp skipped", `{` + base + `, "torch_dtype": "bfloat16", "num_local_experts": 4, "num_experts_per_tok": 2, "quantization_config": {"quant_method": "fp8", "modules_to_not_convert": ["model.layers.0"]}}`, "mixture-of-experts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseModelConfig([]byte(tt.json), "ckpt/config.json")
			if err == nil {
				t.Fatalf("want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "ckpt/config.json") {
				t.Errorf("error %q: want it to contain %q and the file name", err, tt.want)
			}
		})
	}
}

func TestParseModelConfigDefaults(t *testing.T) {
	tests := []struct {
		name, json string
		check      func(Model) string
	}{
		{"kv heads default to heads, head_dim to hidden/heads, dtype float32, length 2048",
			`{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 1000}`,
			func(m Model) string {
				if m.KVHeads != 4 || m.HeadDim != 16 || m.DType != "float32" || m.MaxPositionEmbeddings != 2048 {
					return "defaults not applied"
				}
				return ""
			}},
		{"smallest length key wins",
			`{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 1000, "max_position_embeddings": 4096, "seq_length": 2048}`,
			func(m Model) string {
				if m.MaxPositionEmbeddings != 2048 || m.maxLenKey != "seq_length" {
					return "want seq_length=2048"
				}
				return ""
			}},
		{"text_config of a multimodal checkpoint",
			`{"torch_dtype": "bfloat16", "text_config": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 1000, "max_position_embeddings": 8192}}`,
			func(m Model) string {
				if m.Layers != 2 || m.KVHeads != 2 || m.DType != "bfloat16" || m.MaxPositionEmbeddings != 8192 {
					return "text_config not used"
				}
				return ""
			}},
		{"Qwen3 normalises queries and keys",
			`{"model_type": "qwen3", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 1000}`,
			func(m Model) string {
				if !m.QKNorm {
					return "model_type qwen3 without QKNorm"
				}
				return ""
			}},
		{"Llama does not",
			`{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 1000}`,
			func(m Model) string {
				if m.QKNorm {
					return "model_type llama with QKNorm"
				}
				return ""
			}},
		{"awq spelling",
			`{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 1000, "torch_dtype": "float16", "quantization_config": {"quant_method": "awq", "w_bit": 4, "q_group_size": 128, "zero_point": true}}`,
			func(m Model) string {
				if m.Quantization != (Quantization{Method: "awq", Bits: 4, GroupSize: 128}) {
					return "awq fields not read"
				}
				return ""
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseModelConfig([]byte(tt.json), "config.json")
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(m); msg != "" {
				t.Errorf("%s: got %+v", msg, m)
			}
		})
	}
}

func FuzzParseModelConfig(f *testing.F) {
	for _, p := range []string{
		"testdata/qwen2-7b/config.json",
		"testdata/qwen2.5-7b-instruct-gptq-int4/config.json",
		"testdata/llama-3.1-8b-instruct/config.json",
		"testdata/qwen2.5-7b-instruct-yarn/config.json",
		"testdata/moe/Mixtral-8x7B-v0.1/config.json",
		"testdata/moe/Qwen1.5-MoE-A2.7B/config.json",
		"testdata/moe/Qwen3-30B-A3B/config.json",
		"testdata/moe/DeepSeek-V2-Lite/config.json",
	} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"text_config": {"num_hidden_layers": 1}}`))
	f.Add([]byte(`{"num_hidden_layers": 1, "hidden_size": 8, "num_attention_heads": 1, "intermediate_size": 8, "vocab_size": 8, "rope_scaling": {"type": "yarn", "factor": 1e300}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "fuzz/config.json"
		m, err := ParseModelConfig(data, name)
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if err := m.validate(); err != nil {
			t.Fatalf("accepted an invalid model: %v", err)
		}
		if m.Params() <= 0 || m.WeightBytes() <= 0 || m.KVBytesPerToken("auto") <= 0 || m.DerivedMaxModelLen() <= 0 ||
			m.ActiveLinearParams() <= 0 || m.ActiveLinearParams() > m.LinearParams() {
			t.Fatalf("accepted model with non-positive sizes: %+v", m)
		}
	})
}

// TestExpandedMLAKVBytes: before MLA support vLLM cached DeepSeek's K and V
// per head, padded to 256. PR #10927 printed what that gave for
// DeepSeek-V2-Lite on an H100: 35.42 GiB of KV cache in 5,373 blocks of 16
// tokens.
func TestExpandedMLAKVBytes(t *testing.T) {
	m := mustModel(t, "DeepSeek-V2-Lite")
	if got, want := m.KVBytesPerToken("auto"), int64(27*(512+64)*2); got != want {
		t.Errorf("MLA: %d bytes a token, want %d (latent and rope key)", got, want)
	}
	m.MLA.Expanded = true
	perToken := m.KVBytesPerToken("auto")
	if want := int64(27 * 2 * 16 * 256 * 2); perToken != want {
		t.Errorf("expanded: %d bytes a token, want %d", perToken, want)
	}
	if blocks := int(35.42 * (1 << 30) / float64(16*perToken)); blocks != 5373 {
		t.Errorf("35.42 GiB holds %d blocks of 16 tokens, vLLM printed 5373", blocks)
	}
	// Split across ranks like ordinary heads, not held whole by each.
	if one, four := m.kvElementsPerTokenLayer(1), m.kvElementsPerTokenLayer(4); one != 4*four {
		t.Errorf("elements per token and layer: %d on one rank, %d on each of four", one, four)
	}
}

func TestAttentionActivationWidth(t *testing.T) {
	lite := mustModel(t, "DeepSeek-V2-Lite") // 16 heads, qk 128+64, v 128, latent 512+64
	expanded := lite
	expanded.MLA.Expanded = true
	for _, tc := range []struct {
		name  string
		model Model
		padV  bool
		want  float64
	}{
		{"MLA: decompressed q, k, v, output and latent", lite, false, 16*(192+192+128+128) + 576},
		{"MLA with V padded: v and output at 192", lite, true, 16*(192+192+192+192) + 576},
		{"expanded MLA: q, k, v and output padded to 256", expanded, false, 4*16*256 + 576},
		{"GQA unchanged: 32 query and 8 KV heads of 128", mustModel(t, "Llama-3-8B"), false, (2*32 + 2*8) * 128},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.model.attentionActivationWidth(tc.padV); got != tc.want {
				t.Errorf("width %v elements a token and layer, want %v", got, tc.want)
			}
		})
	}

	// The roofline's activation traffic carries the wider tensors, split
	// across tensor-parallel ranks like the rest of the term.
	traffic := func(m Model) (float64, Deployment) {
		r, err := NewRoofline(Deployment{Model: m, GPU: mustGPU(t, "H100"), TensorParallel: 2, MaxModelLen: 4096})
		if err != nil {
			t.Fatal(err)
		}
		return r.actTokenMemory, r.d
	}
	before, d := traffic(lite)
	after, _ := traffic(expanded)
	g := d.GPU
	bandwidth := g.MemoryBandwidth * g.MBU * g.Scale.bandwidth()
	want := float64(lite.Layers) * activationBytes * (4*16*256 - 16*(192+192+128+128)) / 2 / bandwidth
	if got := after - before; math.Abs(got-want) > 1e-9*want {
		t.Errorf("expanded MLA adds %g s of activation traffic a token at TP=2, want %g", got, want)
	}
}

func TestSkippedLayers(t *testing.T) {
	tests := []struct {
		name           string
		entries        []string
		layers         int
		attention, mlp int
	}{
		{"none", nil, 4, 0, 0},
		{"lm_head only", []string{"lm_head"}, 4, 0, 0},
		{"whole layers by prefix", []string{"model.layers.0", "model.layers.3"}, 4, 2, 2},
		{"attention blocks by prefix", []string{"model.layers.1.self_attn", "model.layers.2.self_attn"}, 4, 2, 0},
		{"full module paths", []string{
			"model.layers.2.self_attn.q_proj", "model.layers.2.self_attn.k_proj",
			"model.layers.2.self_attn.v_proj", "model.layers.2.self_attn.o_proj.weight",
			"model.layers.2.mlp.gate_proj", "model.layers.2.mlp.up_proj", "model.layers.2.mlp.down_proj",
		}, 4, 1, 1},
		// "model.layers.1" must not cover layers 10–19.
		{"prefix stops at a component", []string{"model.layers.1"}, 20, 1, 1},
		{"layers past the model", []string{"model.layers.9"}, 4, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attn, mlp, err := skippedLayers(tt.entries, tt.layers)
			if err != nil {
				t.Fatal(err)
			}
			if attn != tt.attention || mlp != tt.mlp {
				t.Errorf("skippedLayers = %d attention, %d MLP layers; want %d, %d", attn, mlp, tt.attention, tt.mlp)
			}
		})
	}
}

// Meta's FP8 Llama-3.1-405B leaves attention and the first and last
// layers' MLPs 16-bit (fbgemm_fp8, modules_to_not_convert). dstack loaded
// it on 8×H100 (vLLM 0.6.3.post2.dev308) and vLLM logged "Loading model
// weights took 56.7677 GB" per GPU (github.com/dstackai/benchmarks,
// comparison/h100sxm5_vs_mi300x/raw_data/gpu-usage.md; vLLM prints GiB).
// Quantizing every linear layer would give 47.7 GiB.
func TestFBGEMMFP8SkipsAttention(t *testing.T) {
	m, err := LoadModelConfig(filepath.Join("testdata", "llama-3.1-405b-fbgemm-fp8.json"))
	if err != nil {
		t.Fatal(err)
	}
	q := m.Quantization
	if q.Method != "fp8" || q.SkippedAttentionLayers != 126 || q.SkippedMLPLayers != 2 {
		t.Fatalf("quantization = %+v; want fp8 with 126 attention and 2 MLP layers skipped", q)
	}
	d := DefaultDeployment(m, mustGPU(t, "H100"))
	d.TensorParallel = 8
	all := d
	all.Model.Quantization = Quantization{Method: "fp8"}
	const gib = 1 << 30
	published, quantized := float64(d.weightBytesPerGPU())/gib, float64(all.weightBytesPerGPU())/gib
	t.Logf("weights per GPU: %.3f GiB as published, %.3f GiB with every layer quantized", published, quantized)
	if !within(published, 56.7677, 0.005) {
		t.Errorf("weights per GPU = %.3f GiB; vLLM logged 56.768", published)
	}
	if !within(quantized, 47.74, 0.01) {
		t.Errorf("weights per GPU with every layer quantized = %.3f GiB, want 47.74", quantized)
	}

	// The unquantized GEMMs run at the BF16 rate: slower steps than the
	// all-FP8 model, on the kernel tables and on the roofline alike.
	for _, tables := range []bool{true, false} {
		d.NoKernelTables, all.NoKernelTables = !tables, !tables
		rs, err := NewRoofline(d)
		if err != nil {
			t.Fatal(err)
		}
		ra, err := NewRoofline(all)
		if err != nil {
			t.Fatal(err)
		}
		for name, shape := range map[string]StepShape{"prefill": prefillStep(2048), "decode": decodeStep(64, 1024)} {
			if skipped, quantized := rs.StepTime(shape), ra.StepTime(shape); skipped <= quantized {
				t.Errorf("kernel tables %v: %s step %v with 16-bit attention, %v all FP8; want it slower", tables, name, skipped, quantized)
			}
		}
	}
}

func TestQuantizationMethodNames(t *testing.T) {
	for name, want := range map[string]string{
		"": "", "FP8": "fp8", "fbgemm_fp8": "fp8", "gptq_marlin": "gptq", "awq_marlin": "awq", "marlin": "gptq", " awq ": "awq",
	} {
		if got := QuantizationMethod(name); got != want {
			t.Errorf("QuantizationMethod(%q) = %q, want %q", name, got, want)
		}
	}
	// vLLM's own name for Meta's FP8 checkpoints matches the checkpoint and
	// keeps its unquantized layers.
	m, err := LoadModelConfig(filepath.Join("testdata", "llama-3.1-405b-fbgemm-fp8.json"))
	if err != nil {
		t.Fatal(err)
	}
	served, err := m.WithQuantization("fbgemm_fp8")
	if err != nil {
		t.Fatal(err)
	}
	if served.Quantization != m.Quantization {
		t.Errorf("--quantization fbgemm_fp8 changed the checkpoint's quantization: %+v, want %+v", served.Quantization, m.Quantization)
	}
}
