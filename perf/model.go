package perf

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Quantization describes how a checkpoint's linear-layer weights are stored.
// The zero value means unquantized (stored in the model dtype).
type Quantization struct {
	// Method is "", "gptq", "awq" or "fp8".
	Method string
	// Bits per weight for gptq/awq (4 or 8).
	Bits int
	// GroupSize is the number of input rows sharing one scale (and zero
	// point) for gptq/awq; -1 means one group per column (per-channel).
	GroupSize int
	// WeightBlockSize is the side of the square weight blocks sharing one
	// scale in block-wise FP8 checkpoints (DeepSeek-V3's 128, its
	// quantization_config.weight_block_size); 0 for per-tensor or
	// per-channel scales. vLLM runs such MoE layers with block-scaled
	// kernels.
	WeightBlockSize int
	// SkippedAttentionLayers and SkippedMLPLayers count the decoder layers
	// whose attention projections, and whose (dense) MLP, the checkpoint
	// leaves unquantized (quantization_config.modules_to_not_convert):
	// vLLM loads and runs those layers 16-bit. Meta's FP8 Llama-3.1-405B
	// skips every layer's attention and the first and last layers' MLPs.
	SkippedAttentionLayers, SkippedMLPLayers int
}

// Model is the architecture of a dense decoder-only transformer with
// SwiGLU MLPs (Llama/Qwen2 family): everything a step-time and memory model
// needs, as read from a Hugging Face config.json.
type Model struct {
	Name                  string
	Layers                int // num_hidden_layers
	Hidden                int // hidden_size
	Heads                 int // num_attention_heads
	KVHeads               int // num_key_value_heads
	HeadDim               int // head_dim (hidden/heads when absent)
	Intermediate          int // intermediate_size
	Vocab                 int // vocab_size
	TiedEmbeddings        bool
	MaxPositionEmbeddings int
	// DType is the checkpoint's torch_dtype ("bfloat16", "float16",
	// "float32"). vLLM's dtype "auto" serves float32 checkpoints in float16,
	// so activations are 2 bytes for all three.
	DType        string
	Quantization Quantization

	// maxLenKey is the config key vLLM derived the maximum length from
	// (usually "max_position_embeddings"); vLLM names it in its error.
	maxLenKey string
	// ropeFactor > 0 scales the derived maximum length (rope_scaling of
	// type linear/dynamic/yarn), as vLLM 0.5.4's _get_and_verify_max_len does.
	ropeFactor float64
	// modelMaxLength is config.json's model_max_length (0 = absent); vLLM
	// lets a user max_model_len up to it through.
	modelMaxLength int

	// QKNorm: each head's query and key are RMS-normalised before the
	// rotary embedding (Qwen3 and Qwen3-MoE: q_norm and k_norm in vLLM's
	// Qwen3Attention), two more small kernels per layer.
	QKNorm bool

	// MoE is the mixture-of-experts MLP; the zero value means dense.
	MoE MoE
	// MLA is DeepSeek's multi-head latent attention; the zero value means
	// standard (grouped-query) attention.
	MLA MLA
}

// MoE describes the mixture-of-experts layers of a model (Mixtral,
// Qwen-MoE, DeepSeek-V2/V3). Experts == 0 means a dense model.
type MoE struct {
	// Experts is the number of routed experts per MoE layer
	// (num_local_experts, num_experts, n_routed_experts).
	Experts int
	// ExpertsPerToken is the top-k of the router (num_experts_per_tok).
	ExpertsPerToken int
	// ExpertIntermediate is one routed expert's SwiGLU width
	// (moe_intermediate_size; Mixtral's experts use intermediate_size).
	ExpertIntermediate int
	// SharedIntermediate is the total width of the always-active shared
	// experts: shared_expert_intermediate_size (Qwen-MoE) or
	// n_shared_experts·moe_intermediate_size (DeepSeek); 0 for none.
	SharedIntermediate int
	// DenseLayers is how many layers keep a dense MLP of
	// Model.Intermediate (DeepSeek's first_k_dense_replace, Qwen-MoE's
	// mlp_only_layers and decoder_sparse_step).
	DenseLayers int
}

// MLA describes multi-head latent attention: K and V are cached as one
// compressed latent of KVLoraRank plus a shared RoPE key of QKRopeHeadDim
// per token and layer, not split across tensor-parallel ranks.
type MLA struct {
	KVLoraRank    int // kv_lora_rank
	QLoraRank     int // q_lora_rank (0 = queries projected directly)
	QKNopeHeadDim int // qk_nope_head_dim
	QKRopeHeadDim int // qk_rope_head_dim
	VHeadDim      int // v_head_dim

	// Expanded: the server runs the layer as ordinary multi-head
	// attention, as vLLM did before it supported MLA (V0 before 0.7.1, V1
	// before 0.8.0; package vllm sets it): the latent is decompressed into
	// every head's K and V, which are cached per head, each padded to
	// expandedMLAHeadDim, and split across tensor-parallel ranks.
	Expanded bool
}

// expandedMLAHeadDim is the head size vLLM's DeepseekV2Attention padded q,
// k and v to before MLA support (the attention kernels took no 192): the
// KV cache of DeepSeek-V2-Lite (27 layers, 16 heads) then held 2·16·256
// bf16 elements per token and layer, 442,368 bytes a token, as the GPU
// blocks vLLM printed for it in PR #10927 (5,373 blocks of 16 tokens in
// 35.42 GiB) give.
const expandedMLAHeadDim = 256

// IsMoE reports whether the model has mixture-of-experts layers.
func (m Model) IsMoE() bool { return m.MoE.Experts > 0 }

// IsMLA reports whether the model uses multi-head latent attention.
func (m Model) IsMLA() bool { return m.MLA.KVLoraRank > 0 }

// moeLayers is the number of layers with a mixture-of-experts MLP.
func (m Model) moeLayers() int {
	if !m.IsMoE() {
		return 0
	}
	return m.Layers - m.MoE.DenseLayers
}

// LinearParams is N_lin: the parameters of the attention projections, the
// MLPs and (MoE) the routers and every expert, summed over all layers
// (norms and biases are ignored, < 0.1% of any catalog model). It is what
// the weights take in memory.
func (m Model) LinearParams() int64 {
	return int64(m.Layers)*m.attentionParamsPerLayer() +
		int64(m.Layers-m.moeLayers())*m.denseMLPParams() +
		int64(m.moeLayers())*m.moeMLPParams(m.MoE.Experts)
}

// ActiveLinearParams is the part of N_lin one token runs through: for MoE
// models the router, the shared experts and its top-k routed experts only.
// It sets the FLOPs per token; equal to LinearParams for dense models.
func (m Model) ActiveLinearParams() int64 {
	return int64(m.Layers)*m.attentionParamsPerLayer() +
		int64(m.Layers-m.moeLayers())*m.denseMLPParams() +
		int64(m.moeLayers())*m.moeMLPParams(m.MoE.ExpertsPerToken)
}

// routedExpertParams is one routed expert of one layer (a SwiGLU MLP).
func (m Model) routedExpertParams() int64 {
	return 3 * int64(m.Hidden) * int64(m.MoE.ExpertIntermediate)
}

// RoutedExpertParams is the parameters of all routed experts of all MoE
// layers: the part expert parallelism distributes and a decode step reads
// only where tokens were routed.
func (m Model) RoutedExpertParams() int64 {
	return int64(m.moeLayers()) * int64(m.MoE.Experts) * m.routedExpertParams()
}

func (m Model) attentionParamsPerLayer() int64 {
	d, h := int64(m.Hidden), int64(m.Heads)
	if m.IsMLA() {
		a := m.MLA
		qk := int64(a.QKNopeHeadDim + a.QKRopeHeadDim)
		q := d * h * qk
		if a.QLoraRank > 0 {
			q = d*int64(a.QLoraRank) + int64(a.QLoraRank)*h*qk
		}
		kvA := d * int64(a.KVLoraRank+a.QKRopeHeadDim)
		kvB := int64(a.KVLoraRank) * h * int64(a.QKNopeHeadDim+a.VHeadDim)
		o := h * int64(a.VHeadDim) * d
		return q + kvA + kvB + o
	}
	hd := int64(m.HeadDim)
	q := d * h * hd
	kv := 2 * d * int64(m.KVHeads) * hd
	o := h * hd * d
	return q + kv + o
}

func (m Model) denseMLPParams() int64 { return 3 * int64(m.Hidden) * int64(m.Intermediate) }

// moeMLPParams is one MoE layer's router, shared experts and the given
// number of routed experts.
func (m Model) moeMLPParams(routed int) int64 {
	d := int64(m.Hidden)
	router := d * int64(m.MoE.Experts)
	shared := 3 * d * int64(m.MoE.SharedIntermediate)
	return router + shared + int64(routed)*m.routedExpertParams()
}

// mlpActiveWidth is the SwiGLU width a token passes through in an average
// layer: Intermediate for dense models, top-k experts plus shared experts
// for MoE (activation sizes follow it).
func (m Model) mlpActiveWidth() float64 {
	if !m.IsMoE() {
		return float64(m.Intermediate)
	}
	moe := float64(m.MoE.ExpertsPerToken*m.MoE.ExpertIntermediate + m.MoE.SharedIntermediate)
	dense := float64(m.Intermediate)
	l := float64(m.Layers)
	return (float64(m.moeLayers())*moe + float64(m.MoE.DenseLayers)*dense) / l
}

// kvElementsPerTokenLayer is the number of KV cache elements one token
// stores per layer on one of t tensor-parallel ranks: K and V of
// max(1, H_kv/t) heads, or MLA's latent plus RoPE key, which every rank
// holds whole (expanded MLA: K and V of H/t heads at the padded size).
func (m Model) kvElementsPerTokenLayer(t int) int64 {
	if m.IsMLA() && m.MLA.Expanded {
		return 2 * int64(max(1, m.Heads/max(t, 1))) * expandedMLAHeadDim
	}
	if m.IsMLA() {
		return int64(m.MLA.KVLoraRank + m.MLA.QKRopeHeadDim)
	}
	return 2 * int64(max(1, m.KVHeads/max(t, 1))) * int64(m.HeadDim)
}

// attentionFLOPsPerPair is the attention FLOPs of one (query, key) pair in
// one layer over all heads: QK^T and PV. MLA prefill runs as ordinary
// attention over decompressed heads of qk_nope+qk_rope and v_head_dim, or,
// with padV, with V padded to the query/key width (Deployment.mlaPadsV).
func (m Model) attentionFLOPsPerPair(padV bool) float64 {
	if m.IsMLA() && m.MLA.Expanded {
		return 4 * float64(m.Heads) * expandedMLAHeadDim
	}
	if m.IsMLA() {
		return 2 * float64(m.Heads) * float64(m.MLA.QKNopeHeadDim+m.MLA.QKRopeHeadDim+m.mlaPrefillVWidth(padV))
	}
	return 4 * float64(m.Heads) * float64(m.HeadDim)
}

// mlaPrefillVWidth is the width of V and of the attention output in MLA's
// prefill attention: v_head_dim, or qk_nope+qk_rope when V is padded.
func (m Model) mlaPrefillVWidth(padV bool) int {
	if padV {
		return m.MLA.QKNopeHeadDim + m.MLA.QKRopeHeadDim
	}
	return m.MLA.VHeadDim
}

// attentionActivationWidth is the per-token width of the attention
// projections' outputs (Q, K, V and the attention output), summed over
// all heads; the caller splits it across tensor-parallel ranks. MLA adds
// its latent (kv_lora_rank + qk_rope_head_dim) to the decompressed heads:
// q and k at qk_nope + qk_rope, v and the output at v_head_dim (at qk_nope
// + qk_rope with padV, as the padded kernel reads and writes them). Expanded
// MLA ran as ordinary multi-head attention whose kernel took q, k and v
// padded to expandedMLAHeadDim and wrote its output at that size too (cut
// back to v_head_dim only for o_proj), so all four are H·256 wide:
// DeepSeek-V2-Lite's 16 heads write 16,960 elements a token and layer
// instead of MLA's 10,816.
func (m Model) attentionActivationWidth(padV bool) float64 {
	if m.IsMLA() {
		a := m.MLA
		latent := float64(a.KVLoraRank + a.QKRopeHeadDim)
		if a.Expanded {
			return 4*float64(m.Heads)*expandedMLAHeadDim + latent
		}
		return float64(m.Heads)*float64(2*(a.QKNopeHeadDim+a.QKRopeHeadDim)+2*m.mlaPrefillVWidth(padV)) + latent
	}
	return float64(2*m.Heads+2*m.KVHeads) * float64(m.HeadDim)
}

// EmbeddingParams is vocab·hidden, the size of the input embedding and of
// the lm_head.
func (m Model) EmbeddingParams() int64 { return int64(m.Vocab) * int64(m.Hidden) }

// Params is the parameter count: N_lin + embedding + lm_head unless tied.
func (m Model) Params() int64 {
	p := m.LinearParams() + m.EmbeddingParams()
	if !m.TiedEmbeddings {
		p += m.EmbeddingParams()
	}
	return p
}

// QuantizationMethod is the method sim models for a vLLM quantization
// name: lower case, the Marlin kernels' names (gptq_marlin, awq_marlin,
// marlin) as the checkpoint formats they run, and Meta's fbgemm_fp8 as
// fp8 (parseQuantization says why).
func QuantizationMethod(name string) string {
	s := strings.ToLower(strings.TrimSpace(name))
	switch s {
	case "marlin":
		return "gptq"
	case "fbgemm_fp8":
		return "fp8"
	}
	return strings.TrimSuffix(s, "_marlin")
}

// WithQuantization is the model as vLLM serves it with --quantization
// method. A quantized checkpoint must name the same method (vLLM refuses
// another); an unquantized one takes only fp8, which vLLM applies as the
// weights load (Fp8LinearMethod: per-tensor weight scales, dynamic
// activation scales), so it then runs and stores as an fp8 checkpoint.
// "" keeps the checkpoint's own quantization.
func (m Model) WithQuantization(method string) (Model, error) {
	want := QuantizationMethod(method)
	have := m.Quantization.Method
	switch {
	case want == "" || want == have:
		return m, nil
	case have != "":
		return m, fmt.Errorf("quantization method specified in the model config (%s) does not match the quantization method specified in the `quantization` argument (%s)", have, method)
	case want == "fp8":
		m.Quantization = Quantization{Method: "fp8"}
		return m, nil
	case want == "gptq" || want == "awq":
		return m, fmt.Errorf("%s needs a checkpoint quantized with it (a quantization_config in its config.json); %s is unquantized, and only fp8 quantizes an unquantized checkpoint as it loads", method, m.Name)
	}
	return m, fmt.Errorf("%s is not a quantization servebench models: use fp8 (on the fly), or a gptq, awq or fp8 checkpoint", method)
}

// linearBytesPerParam is the storage cost of one linear-layer weight,
// including gptq/awq scales and packed zero points (one fp16 scale and one
// bits-wide zero per group of GroupSize input rows per output column).
func (m Model) linearBytesPerParam() float64 {
	switch m.Quantization.Method {
	case "gptq", "awq":
		bits := float64(m.Quantization.Bits)
		group := float64(m.Quantization.GroupSize)
		if group <= 0 {
			group = float64(m.Hidden)
		}
		return bits/8 + (2+bits/8)/group
	case "fp8":
		return 1
	default:
		return activationBytes
	}
}

// activationBytes is the width of activations, unquantized weights and
// the "auto" KV cache: bf16/fp16 (vLLM serves float32 checkpoints as fp16).
const activationBytes = 2

// WeightBytes is the size of all weights as vLLM loads them: linear layers
// at their quantized width (the modules a checkpoint leaves unquantized at
// 16 bits), embedding and lm_head in 16 bits (GPTQ/AWQ/FP8 checkpoints
// keep both unquantized), the lm_head only when untied.
func (m Model) WeightBytes() int64 {
	return int64(math.Round(float64(m.LinearParams())*m.linearBytesPerParam()+m.skippedExtraBytes())) +
		m.embeddingAndHeadBytes()
}

// skippedLinearParams is the linear parameters a quantized checkpoint
// leaves unquantized (whole attention blocks and dense MLPs of the layers
// its modules_to_not_convert names).
func (m Model) skippedLinearParams() int64 {
	q := m.Quantization
	return int64(q.SkippedAttentionLayers)*m.attentionParamsPerLayer() +
		int64(q.SkippedMLPLayers)*m.denseMLPParams()
}

// sharedLinearBytes is one GPU's share of the linear weights but the
// routed experts, for a stage holding the fraction stage of the layers
// split over t ranks, with the unquantized modules at 16 bits.
func (m Model) sharedLinearBytes(stage, t float64) float64 {
	return float64(m.LinearParams()-m.RoutedExpertParams())*stage*m.linearBytesPerParam()/t + m.skippedExtraBytes()*stage/t
}

// skippedExtraBytes is what the unquantized modules weigh beyond their
// quantized width: 16 bits a weight instead of linearBytesPerParam. Zero
// when nothing is skipped, so every other checkpoint's sizes stay exact.
func (m Model) skippedExtraBytes() float64 {
	return float64(m.skippedLinearParams()) * (activationBytes - m.linearBytesPerParam())
}

// embeddingAndHeadBytes counts the 16-bit embedding, plus the lm_head
// unless it is tied to the embedding.
func (m Model) embeddingAndHeadBytes() int64 {
	b := m.EmbeddingParams() * activationBytes
	if !m.TiedEmbeddings {
		b *= 2
	}
	return b
}

// KVBytesPerToken is 2·L·H_kv·d_h·b_kv (MLA: L·(kv_lora_rank +
// qk_rope_head_dim)·b_kv) for the whole model on one GPU;
// kvCacheDType is "auto" (model dtype, 2 bytes) or "fp8" (1 byte).
func (m Model) KVBytesPerToken(kvCacheDType string) int64 {
	b := int64(activationBytes)
	if isFP8KVCache(kvCacheDType) {
		b = 1
	}
	if m.IsMLA() {
		return int64(m.Layers) * m.kvElementsPerTokenLayer(1) * b
	}
	return 2 * int64(m.Layers) * int64(m.KVHeads) * int64(m.HeadDim) * b
}

// DerivedMaxModelLen is the longest context vLLM allows for this model when
// --max-model-len is not given.
func (m Model) DerivedMaxModelLen() int {
	derived := float64(m.MaxPositionEmbeddings)
	if m.ropeFactor > 0 {
		derived *= m.ropeFactor
	}
	return int(derived)
}

// derivedMaxLenText renders the derived length the way Python prints it in
// vLLM's message: an int, or a float ("131072.0") after rope scaling.
func (m Model) derivedMaxLenText() string {
	if m.ropeFactor > 0 {
		return pyFloat(float64(m.MaxPositionEmbeddings) * m.ropeFactor)
	}
	return fmt.Sprint(m.MaxPositionEmbeddings)
}

func (m Model) validate() error {
	checks := []struct {
		v        int
		max      int
		field    string
		required bool
	}{
		{m.Layers, 1 << 12, "num_hidden_layers", true},
		{m.Hidden, 1 << 18, "hidden_size", true},
		{m.Heads, 1 << 12, "num_attention_heads", true},
		{m.KVHeads, 1 << 12, "num_key_value_heads", true},
		{m.HeadDim, 1 << 12, "head_dim", true},
		{m.Intermediate, 1 << 20, "intermediate_size", true},
		{m.Vocab, 1 << 23, "vocab_size", true},
		{m.MaxPositionEmbeddings, 1 << 30, "max_position_embeddings", true},
	}
	for _, c := range checks {
		if c.v <= 0 || c.v > c.max {
			return fmt.Errorf("%s is %d; it must be between 1 and %d", c.field, c.v, c.max)
		}
	}
	if err := m.validateMoE(); err != nil {
		return err
	}
	if err := m.validateMLA(); err != nil {
		return err
	}
	if m.Heads%m.KVHeads != 0 {
		return fmt.Errorf("num_attention_heads (%d) is not a multiple of num_key_value_heads (%d)", m.Heads, m.KVHeads)
	}
	switch m.DType {
	case "bfloat16", "float16", "float32":
	default:
		return fmt.Errorf("torch_dtype %q is not supported; use bfloat16, float16 or float32", m.DType)
	}
	if m.Quantization.SkippedMLPLayers > 0 && m.IsMoE() {
		return fmt.Errorf("quantization_config.modules_to_not_convert leaves MLPs of a mixture-of-experts model unquantized, which perf does not model")
	}
	switch q := m.Quantization; q.Method {
	case "":
	case "fp8":
	case "gptq", "awq":
		if q.Bits != 4 && q.Bits != 8 {
			return fmt.Errorf("quantization_config.bits is %d; %s is modelled for 4 or 8 bits", q.Bits, q.Method)
		}
		if q.GroupSize == 0 || q.GroupSize < -1 || q.GroupSize > 1<<16 {
			return fmt.Errorf("quantization_config.group_size is %d; use -1 (per channel) or a positive group size", q.GroupSize)
		}
	default:
		return fmt.Errorf("quantization method %q is not modelled; supported: gptq, awq, fp8", q.Method)
	}
	if m.ropeFactor < 0 || m.ropeFactor > 1024 || math.IsNaN(m.ropeFactor) {
		return fmt.Errorf("rope_scaling.factor %v is out of range (0, 1024]", m.ropeFactor)
	}
	if m.DerivedMaxModelLen() > 1<<30 {
		return fmt.Errorf("derived max model length %d is above %d", m.DerivedMaxModelLen(), 1<<30)
	}
	return nil
}

func (m Model) validateMoE() error {
	e := m.MoE
	if e == (MoE{}) {
		return nil
	}
	if e.Experts <= 0 || e.Experts > 1<<10 {
		return fmt.Errorf("the number of routed experts is %d; it must be between 1 and %d", e.Experts, 1<<10)
	}
	if e.ExpertsPerToken <= 0 || e.ExpertsPerToken > e.Experts {
		return fmt.Errorf("num_experts_per_tok is %d; it must be between 1 and the %d routed experts", e.ExpertsPerToken, e.Experts)
	}
	if e.ExpertIntermediate <= 0 || e.ExpertIntermediate > 1<<20 {
		return fmt.Errorf("the expert intermediate size (moe_intermediate_size) is %d; it must be between 1 and %d", e.ExpertIntermediate, 1<<20)
	}
	if e.SharedIntermediate < 0 || e.SharedIntermediate > 1<<20 {
		return fmt.Errorf("the shared expert intermediate size is %d; it must be between 0 and %d", e.SharedIntermediate, 1<<20)
	}
	if e.DenseLayers < 0 || e.DenseLayers > m.Layers {
		return fmt.Errorf("%d dense layers (first_k_dense_replace) is outside 0..num_hidden_layers (%d)", e.DenseLayers, m.Layers)
	}
	return nil
}

func (m Model) validateMLA() error {
	a := m.MLA
	if a == (MLA{}) {
		return nil
	}
	for _, c := range []struct {
		v     int
		field string
		zero  bool
	}{
		{a.KVLoraRank, "kv_lora_rank", false},
		{a.QLoraRank, "q_lora_rank", true},
		{a.QKNopeHeadDim, "qk_nope_head_dim", false},
		{a.QKRopeHeadDim, "qk_rope_head_dim", false},
		{a.VHeadDim, "v_head_dim", false},
	} {
		if c.v < 0 || c.v > 1<<16 || (c.v == 0 && !c.zero) {
			return fmt.Errorf("%s is %d; multi-head latent attention needs it between 1 and %d", c.field, c.v, 1<<16)
		}
	}
	return nil
}

// catalogModel is one architecture plus the names it answers to.
type catalogModel struct {
	model   Model
	aliases []string
}

func qwen2(name string, maxPos int, aliases ...string) catalogModel {
	return catalogModel{Model{
		Name: name, Layers: 28, Hidden: 3584, Heads: 28, KVHeads: 4, HeadDim: 128,
		Intermediate: 18944, Vocab: 152064, MaxPositionEmbeddings: maxPos, DType: "bfloat16",
		maxLenKey: "max_position_embeddings",
	}, aliases}
}

func qwen2Small(name string, maxPos int, aliases ...string) catalogModel {
	return catalogModel{Model{
		Name: name, Layers: 24, Hidden: 896, Heads: 14, KVHeads: 2, HeadDim: 64,
		Intermediate: 4864, Vocab: 151936, TiedEmbeddings: true, MaxPositionEmbeddings: maxPos,
		DType: "bfloat16", maxLenKey: "max_position_embeddings",
	}, aliases}
}

func llama3_8B(name string, maxPos int, aliases ...string) catalogModel {
	return catalogModel{Model{
		Name: name, Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128,
		Intermediate: 14336, Vocab: 128256, MaxPositionEmbeddings: maxPos, DType: "bfloat16",
		maxLenKey: "max_position_embeddings",
	}, aliases}
}

func llama3_70B(name string, maxPos int, aliases ...string) catalogModel {
	return catalogModel{Model{
		Name: name, Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128,
		Intermediate: 28672, Vocab: 128256, MaxPositionEmbeddings: maxPos, DType: "bfloat16",
		maxLenKey: "max_position_embeddings",
	}, aliases}
}

// arch is the config.json fields of a catalog entry that vary between
// families; dense builds a bf16 model from them.
type arch struct {
	layers, hidden, heads, kvHeads, headDim, intermediate, vocab, maxPos int
	tied                                                                 bool
}

func dense(name string, a arch, aliases ...string) catalogModel {
	return catalogModel{Model{
		Name: name, Layers: a.layers, Hidden: a.hidden, Heads: a.heads, KVHeads: a.kvHeads, HeadDim: a.headDim,
		Intermediate: a.intermediate, Vocab: a.vocab, TiedEmbeddings: a.tied, MaxPositionEmbeddings: a.maxPos,
		DType: "bfloat16", maxLenKey: "max_position_embeddings",
	}, aliases}
}

func withQKNorm(c catalogModel) catalogModel {
	c.model.QKNorm = true
	return c
}

func moe(name string, a arch, e MoE, aliases ...string) catalogModel {
	c := dense(name, a, aliases...)
	c.model.MoE = e
	return c
}

// deepseek builds a DeepSeek-V2/V3 MLA model. Its config.json says
// max_position_embeddings 163840 with rope_scaling yarn, factor 40 over
// original_max_position_embeddings 4096, which vLLM derives as 163840.0.
func deepseek(name string, a arch, e MoE, mla MLA, aliases ...string) catalogModel {
	c := moe(name, a, e, aliases...)
	c.model.MLA = mla
	c.model.HeadDim = mla.QKNopeHeadDim + mla.QKRopeHeadDim
	c.model.MaxPositionEmbeddings, c.model.ropeFactor = 4096, 40
	return c
}

// modelCatalog holds the Hugging Face configs of the models servebench
// knows by name (doc.go cites each). Base and instruct checkpoints that
// differ only in max_position_embeddings are separate entries.
var modelCatalog = func() []catalogModel {
	gptq := qwen2("Qwen2.5-7B-Instruct-GPTQ-Int4", 32768)
	gptq.model.DType = "float16"
	gptq.model.Quantization = Quantization{Method: "gptq", Bits: 4, GroupSize: 128}
	deepseekV3 := deepseek("DeepSeek-V3",
		arch{layers: 61, hidden: 7168, heads: 128, kvHeads: 128, intermediate: 18432, vocab: 129280},
		MoE{Experts: 256, ExpertsPerToken: 8, ExpertIntermediate: 2048, SharedIntermediate: 2048, DenseLayers: 3},
		MLA{KVLoraRank: 512, QLoraRank: 1536, QKNopeHeadDim: 128, QKRopeHeadDim: 64, VHeadDim: 128},
		"DeepSeek-V3-0324", "DeepSeek-R1", "DeepSeek-R1-0528")
	// Shipped as block-wise FP8 (128×128 fp32 scales, < 0.03% extra).
	deepseekV3.model.Quantization = Quantization{Method: "fp8", WeightBlockSize: 128}
	qwen3 := func(name string, layers, hidden, heads, inter int, tied bool) catalogModel {
		c := dense(name, arch{layers: layers, hidden: hidden, heads: heads, kvHeads: 8, headDim: 128,
			intermediate: inter, vocab: 151936, maxPos: 40960, tied: tied})
		return withQKNorm(c)
	}
	qwen25 := func(name string, layers, hidden, heads, kvHeads, inter, vocab int, tied bool) catalogModel {
		return dense(name, arch{layers: layers, hidden: hidden, heads: heads, kvHeads: kvHeads, headDim: hidden / heads,
			intermediate: inter, vocab: vocab, maxPos: 32768, tied: tied})
	}
	return []catalogModel{
		dense("Llama-3.2-1B", arch{16, 2048, 32, 8, 64, 8192, 128256, 131072, true}, "Llama-3.2-1B-Instruct"),
		dense("Llama-3.2-3B", arch{28, 3072, 24, 8, 128, 8192, 128256, 131072, true}, "Llama-3.2-3B-Instruct"),
		llama3_70B("Llama-3.3-70B", 131072, "Llama-3.3-70B-Instruct"),
		dense("Mistral-7B-v0.3", arch{32, 4096, 32, 8, 128, 14336, 32768, 32768, false}, "Mistral-7B-Instruct-v0.3"),
		moe("Mixtral-8x7B", arch{32, 4096, 32, 8, 128, 14336, 32000, 32768, false},
			MoE{Experts: 8, ExpertsPerToken: 2, ExpertIntermediate: 14336},
			"Mixtral-8x7B-v0.1", "Mixtral-8x7B-Instruct-v0.1"),
		moe("Mixtral-8x22B", arch{56, 6144, 48, 8, 128, 16384, 32000, 65536, false},
			MoE{Experts: 8, ExpertsPerToken: 2, ExpertIntermediate: 16384}, "Mixtral-8x22B-v0.1"),
		moe("Mixtral-8x22B-Instruct-v0.1", arch{56, 6144, 48, 8, 128, 16384, 32768, 65536, false},
			MoE{Experts: 8, ExpertsPerToken: 2, ExpertIntermediate: 16384}),
		qwen25("Qwen2.5-0.5B-Instruct", 24, 896, 14, 2, 4864, 151936, true),
		qwen25("Qwen2.5-1.5B-Instruct", 28, 1536, 12, 2, 8960, 151936, true),
		qwen25("Qwen2.5-3B-Instruct", 36, 2048, 16, 2, 11008, 151936, true),
		qwen25("Qwen2.5-14B-Instruct", 48, 5120, 40, 8, 13824, 152064, false),
		qwen25("Qwen2.5-32B-Instruct", 64, 5120, 40, 8, 27648, 152064, false),
		qwen25("Qwen2.5-72B-Instruct", 80, 8192, 64, 8, 29568, 152064, false),
		qwen3("Qwen3-0.6B", 28, 1024, 16, 3072, true),
		qwen3("Qwen3-1.7B", 28, 2048, 16, 6144, true),
		qwen3("Qwen3-4B", 36, 2560, 32, 9728, true),
		qwen3("Qwen3-8B", 36, 4096, 32, 12288, false),
		qwen3("Qwen3-14B", 40, 5120, 40, 17408, false),
		qwen3("Qwen3-32B", 64, 5120, 64, 25600, false),
		withQKNorm(moe("Qwen3-30B-A3B", arch{48, 2048, 32, 4, 128, 6144, 151936, 40960, false},
			MoE{Experts: 128, ExpertsPerToken: 8, ExpertIntermediate: 768})),
		withQKNorm(moe("Qwen3-235B-A22B", arch{94, 4096, 64, 4, 128, 12288, 151936, 40960, false},
			MoE{Experts: 128, ExpertsPerToken: 8, ExpertIntermediate: 1536})),
		moe("Qwen1.5-MoE-A2.7B", arch{24, 2048, 16, 16, 128, 5632, 151936, 8192, false},
			MoE{Experts: 60, ExpertsPerToken: 4, ExpertIntermediate: 1408, SharedIntermediate: 5632},
			"Qwen1.5-MoE-A2.7B-Chat"),
		dense("Gemma-2-9B", arch{42, 3584, 16, 8, 256, 14336, 256000, 8192, true}, "gemma-2-9b-it"),
		dense("Gemma-2-27B", arch{46, 4608, 32, 16, 128, 36864, 256000, 8192, true}, "gemma-2-27b-it"),
		deepseek("DeepSeek-V2-Lite",
			arch{layers: 27, hidden: 2048, heads: 16, kvHeads: 16, intermediate: 10944, vocab: 102400},
			MoE{Experts: 64, ExpertsPerToken: 6, ExpertIntermediate: 1408, SharedIntermediate: 2 * 1408, DenseLayers: 1},
			MLA{KVLoraRank: 512, QKNopeHeadDim: 128, QKRopeHeadDim: 64, VHeadDim: 128},
			"DeepSeek-V2-Lite-Chat"),
		deepseekV3,
		qwen2Small("Qwen2-0.5B", 131072),
		qwen2Small("Qwen2-0.5B-Instruct", 32768),
		qwen2("Qwen2-7B", 131072),
		qwen2("Qwen2-7B-Instruct", 32768),
		qwen2("Qwen2.5-7B", 131072),
		qwen2("Qwen2.5-7B-Instruct", 32768),
		gptq,
		llama3_8B("Llama-3-8B", 8192, "Meta-Llama-3-8B", "Llama-3-8B-Instruct", "Meta-Llama-3-8B-Instruct"),
		// Llama 3.1's rope_scaling is of type "llama3", which vLLM does not
		// multiply into the derived length: 131072 stays 131072.
		llama3_8B("Llama-3.1-8B", 131072, "Meta-Llama-3.1-8B", "Llama-3.1-8B-Instruct", "Meta-Llama-3.1-8B-Instruct"),
		llama3_70B("Llama-3-70B", 8192, "Meta-Llama-3-70B", "Llama-3-70B-Instruct", "Meta-Llama-3-70B-Instruct"),
		llama3_70B("Llama-3.1-70B", 131072, "Meta-Llama-3.1-70B", "Llama-3.1-70B-Instruct", "Meta-Llama-3.1-70B-Instruct"),
	}
}()

// Models lists the catalog's model names.
func Models() []string {
	names := make([]string, len(modelCatalog))
	for i, c := range modelCatalog {
		names[i] = c.model.Name
	}
	return names
}

// normalizeModelName makes "meta-llama/Meta-Llama-3-8B" and "llama-3-8b"
// meet: lower case, the last path element of a Hugging Face id, '_' as '-'.
func normalizeModelName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimRight(s, "/")
	if i := strings.LastIndex(s, "/"); i >= 0 {
		s = s[i+1:]
	}
	return strings.ReplaceAll(s, "_", "-")
}

func lookupCatalogModel(name string) (Model, bool) {
	key := normalizeModelName(name)
	if key == "" {
		return Model{}, false
	}
	for _, c := range modelCatalog {
		if normalizeModelName(c.model.Name) == key {
			return c.model, true
		}
		for _, a := range c.aliases {
			if normalizeModelName(a) == key {
				return c.model, true
			}
		}
	}
	return Model{}, false
}

// LookupModel returns a model by catalog name or Hugging Face id
// (case-insensitive: "Qwen/Qwen2-7B", "meta-llama/Llama-3.1-8B-Instruct"),
// or reads it from a path to an HF config.json or a directory holding one.
// A path that exists wins over a catalog name, as in vLLM. It does not
// look in the Hugging Face cache; LookupModelInCache does.
func LookupModel(nameOrPath string) (Model, error) {
	return LookupModelInCache(nameOrPath, nil)
}

// LookupModelInCache is LookupModel that first resolves a Hugging Face id
// ("org/name") from the local hub cache directories hfCacheDirs (see
// HFEnv.CacheDirs), reading the cached config.json, so that any cached
// model works, not only catalog ones. Nothing is downloaded.
func LookupModelInCache(nameOrPath string, hfCacheDirs []string) (Model, error) {
	if info, err := os.Stat(nameOrPath); err == nil && nameOrPath != "" {
		path := nameOrPath
		if info.IsDir() {
			path = filepath.Join(path, "config.json")
		}
		return LoadModelConfig(path)
	}
	var cacheErr error
	if len(hfCacheDirs) > 0 && isHFRepoID(strings.TrimSpace(nameOrPath)) {
		path, err := FindHFFile(nameOrPath, hfCacheDirs, "config.json")
		if err == nil {
			m, err := LoadModelConfig(path)
			if err == nil {
				m.Name = nameOrPath[strings.LastIndex(nameOrPath, "/")+1:]
			}
			return m, err
		}
		cacheErr = err
	}
	if m, ok := lookupCatalogModel(nameOrPath); ok {
		return m, nil
	}
	if strings.HasSuffix(strings.ToLower(nameOrPath), ".json") {
		return Model{}, fmt.Errorf("perf: model config %s: file not found; give the path to an existing Hugging Face config.json", nameOrPath)
	}
	if miss := (*HFCacheMissError)(nil); errors.As(cacheErr, &miss) {
		return Model{}, fmt.Errorf("perf: unknown model %q: not a catalog model (%s), and %w", nameOrPath, strings.Join(Models(), ", "), &hfMissDetail{miss})
	}
	return Model{}, fmt.Errorf("perf: unknown model %q; known models: %s; or pass the path to the model's Hugging Face config.json (or its directory)",
		nameOrPath, strings.Join(Models(), ", "))
}

// hfMissDetail prints a cache miss without its "perf: id is" prefix when
// it ends a longer sentence, and still unwraps to it.
type hfMissDetail struct{ miss *HFCacheMissError }

func (d *hfMissDetail) Error() string { return d.miss.detail() }
func (d *hfMissDetail) Unwrap() error { return d.miss }

// LoadModelConfig reads a Hugging Face config.json.
func LoadModelConfig(path string) (Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Model{}, fmt.Errorf("perf: read model config: %w", err)
	}
	return ParseModelConfig(data, path)
}

// hfConfig mirrors the config.json fields vLLM reads for a dense decoder.
type hfConfig struct {
	NumHiddenLayers       *int            `json:"num_hidden_layers"`
	HiddenSize            *int            `json:"hidden_size"`
	NumAttentionHeads     *int            `json:"num_attention_heads"`
	NumKeyValueHeads      *int            `json:"num_key_value_heads"`
	HeadDim               *int            `json:"head_dim"`
	IntermediateSize      *int            `json:"intermediate_size"`
	VocabSize             *int            `json:"vocab_size"`
	TieWordEmbeddings     *bool           `json:"tie_word_embeddings"`
	MaxPositionEmbeddings *int            `json:"max_position_embeddings"`
	NPositions            *int            `json:"n_positions"`
	MaxSeqLen             *int            `json:"max_seq_len"`
	SeqLength             *int            `json:"seq_length"`
	ModelMaxLength        *int            `json:"model_max_length"`
	MaxSequenceLength     *int            `json:"max_sequence_length"`
	MaxSeqLength          *int            `json:"max_seq_length"`
	SeqLen                *int            `json:"seq_len"`
	TorchDType            *string         `json:"torch_dtype"`
	RopeScaling           *hfRopeScaling  `json:"rope_scaling"`
	QuantizationConfig    *hfQuantization `json:"quantization_config"`
	TextConfig            *hfConfig       `json:"text_config"`
	ModelType             string          `json:"model_type"`

	// Mixture of experts: Mixtral (num_local_experts), Qwen-MoE
	// (num_experts, moe_intermediate_size, shared_expert_intermediate_size,
	// decoder_sparse_step, mlp_only_layers), DeepSeek (n_routed_experts,
	// n_shared_experts, first_k_dense_replace, moe_layer_freq).
	NumLocalExperts              *int  `json:"num_local_experts"`
	NumExperts                   *int  `json:"num_experts"`
	NRoutedExperts               *int  `json:"n_routed_experts"`
	NumExpertsPerTok             *int  `json:"num_experts_per_tok"`
	MoEIntermediateSize          *int  `json:"moe_intermediate_size"`
	SharedExpertIntermediateSize *int  `json:"shared_expert_intermediate_size"`
	NSharedExperts               *int  `json:"n_shared_experts"`
	FirstKDenseReplace           *int  `json:"first_k_dense_replace"`
	MoELayerFreq                 *int  `json:"moe_layer_freq"`
	DecoderSparseStep            *int  `json:"decoder_sparse_step"`
	MLPOnlyLayers                []int `json:"mlp_only_layers"`

	// Multi-head latent attention (DeepSeek-V2/V3).
	KVLoraRank    *int `json:"kv_lora_rank"`
	QLoraRank     *int `json:"q_lora_rank"`
	QKNopeHeadDim *int `json:"qk_nope_head_dim"`
	QKRopeHeadDim *int `json:"qk_rope_head_dim"`
	VHeadDim      *int `json:"v_head_dim"`
}

// parseMoE reads the mixture-of-experts keys of the three config families.
func parseMoE(cfg *hfConfig, layers, intermediate int) (MoE, error) {
	var e MoE
	switch {
	case cfg.NumLocalExperts != nil:
		e.Experts = *cfg.NumLocalExperts
	case cfg.NRoutedExperts != nil:
		e.Experts = *cfg.NRoutedExperts
	case cfg.NumExperts != nil:
		e.Experts = *cfg.NumExperts
	}
	if e.Experts == 0 {
		return MoE{}, nil
	}
	if cfg.NumExpertsPerTok == nil {
		return MoE{}, fmt.Errorf("the config has %d experts but no num_experts_per_tok; add the router's top-k", e.Experts)
	}
	e.ExpertsPerToken = *cfg.NumExpertsPerTok
	e.ExpertIntermediate = intermediate // Mixtral's experts are intermediate_size wide
	if cfg.MoEIntermediateSize != nil {
		e.ExpertIntermediate = *cfg.MoEIntermediateSize
	}
	switch {
	case cfg.SharedExpertIntermediateSize != nil:
		e.SharedIntermediate = *cfg.SharedExpertIntermediateSize
	case cfg.NSharedExperts != nil:
		e.SharedIntermediate = *cfg.NSharedExperts * e.ExpertIntermediate
	}
	firstDense, freq, step := 0, 1, 1
	if cfg.FirstKDenseReplace != nil {
		firstDense = *cfg.FirstKDenseReplace
	}
	if cfg.MoELayerFreq != nil && *cfg.MoELayerFreq > 0 {
		freq = *cfg.MoELayerFreq
	}
	if cfg.DecoderSparseStep != nil && *cfg.DecoderSparseStep > 0 {
		step = *cfg.DecoderSparseStep
	}
	mlpOnly := make(map[int]bool, len(cfg.MLPOnlyLayers))
	for _, l := range cfg.MLPOnlyLayers {
		mlpOnly[l] = true
	}
	// vLLM's DeepseekV2DecoderLayer and Qwen2MoeDecoderLayer choose per
	// layer; only the count matters here.
	for i := range min(max(layers, 0), 1<<12) {
		moe := i >= firstDense && i%freq == 0 && (i+1)%step == 0 && !mlpOnly[i]
		if !moe {
			e.DenseLayers++
		}
	}
	return e, nil
}

type hfRopeScaling struct {
	Type                          string   `json:"type"`
	RopeType                      string   `json:"rope_type"`
	Factor                        *float64 `json:"factor"`
	OriginalMaxPositionEmbeddings *int     `json:"original_max_position_embeddings"`
}

type hfQuantization struct {
	QuantMethod string `json:"quant_method"`
	Bits        *int   `json:"bits"`
	WBit        *int   `json:"w_bit"` // AutoAWQ spelling
	GroupSize   *int   `json:"group_size"`
	QGroupSize  *int   `json:"q_group_size"` // AutoAWQ spelling
	// WeightBlockSize is [rows, columns] of one scale's block (FP8).
	WeightBlockSize []int `json:"weight_block_size"`
	// ModulesToNotConvert names the modules left unquantized (fbgemm_fp8,
	// AWQ): full module paths, or prefixes of them.
	ModulesToNotConvert []string `json:"modules_to_not_convert"`
}

// ParseModelConfig parses the bytes of a Hugging Face config.json; name
// (the file path) appears in every error.
func ParseModelConfig(data []byte, name string) (Model, error) {
	fail := func(format string, args ...any) (Model, error) {
		return Model{}, fmt.Errorf("perf: model config %s: %s", name, fmt.Sprintf(format, args...))
	}
	cfg, err := decodeHFConfig(data)
	if err != nil {
		return fail("%v", err)
	}
	required := []struct {
		v     *int
		field string
	}{
		{cfg.NumHiddenLayers, "num_hidden_layers"},
		{cfg.HiddenSize, "hidden_size"},
		{cfg.NumAttentionHeads, "num_attention_heads"},
		{cfg.IntermediateSize, "intermediate_size"},
		{cfg.VocabSize, "vocab_size"},
	}
	for _, r := range required {
		if r.v == nil {
			return fail("%s is missing; servebench models decoder-only configs (Llama/Qwen/Mistral/Gemma-style, Mixtral/Qwen-MoE/DeepSeek MoE)", r.field)
		}
	}
	m := Model{
		Name:         strings.TrimSuffix(filepath.Base(filepath.Dir(name)), string(filepath.Separator)),
		Layers:       *cfg.NumHiddenLayers,
		Hidden:       *cfg.HiddenSize,
		Heads:        *cfg.NumAttentionHeads,
		Intermediate: *cfg.IntermediateSize,
		Vocab:        *cfg.VocabSize,
		DType:        "float32", // transformers' default when torch_dtype is absent
	}
	if m.Name == "." || m.Name == "" || m.Name == string(filepath.Separator) {
		m.Name = filepath.Base(name)
	}
	m.QKNorm = qkNormModelTypes[cfg.ModelType]
	m.KVHeads = m.Heads
	if cfg.NumKeyValueHeads != nil {
		m.KVHeads = *cfg.NumKeyValueHeads
	}
	if cfg.HeadDim != nil {
		m.HeadDim = *cfg.HeadDim
	} else if m.Heads > 0 && m.Hidden > 0 {
		if m.Hidden%m.Heads != 0 {
			return fail("hidden_size (%d) is not a multiple of num_attention_heads (%d) and head_dim is absent; add head_dim", m.Hidden, m.Heads)
		}
		m.HeadDim = m.Hidden / m.Heads
	}
	if m.MoE, err = parseMoE(&cfg, m.Layers, m.Intermediate); err != nil {
		return fail("%v", err)
	}
	if mla, ok := parseMLA(&cfg); ok {
		m.MLA = mla
		// The query/key head of MLA; hidden/heads means nothing here.
		m.HeadDim = m.MLA.QKNopeHeadDim + m.MLA.QKRopeHeadDim
	}
	// Absent means untied: LlamaConfig and Qwen2Config default to false.
	if cfg.TieWordEmbeddings != nil {
		m.TiedEmbeddings = *cfg.TieWordEmbeddings
	}
	if cfg.TorchDType != nil {
		m.DType = strings.TrimPrefix(*cfg.TorchDType, "torch.")
	}
	if m.DType == "half" {
		m.DType = "float16"
	}
	if err := m.setMaxLength(&cfg); err != nil {
		return fail("%v", err)
	}
	if q := cfg.QuantizationConfig; q != nil {
		if m.Quantization, err = parseQuantization(q, m.Layers); err != nil {
			return fail("%v", err)
		}
	}
	if err := m.validate(); err != nil {
		return fail("%v", err)
	}
	return m, nil
}

// qkNormModelTypes are the config model_types whose vLLM attention
// normalises each head's query and key (Qwen3Attention, Qwen3MoeAttention).
var qkNormModelTypes = map[string]bool{"qwen3": true, "qwen3_moe": true}

// decodeHFConfig unmarshals a config.json. Multimodal checkpoints nest the
// language model's fields, as vLLM's get_hf_text_config does; those are
// returned in its place.
func decodeHFConfig(data []byte) (hfConfig, error) {
	var cfg hfConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return cfg, fmt.Errorf("field %q has a %s where a %s is expected", typeErr.Field, typeErr.Value, typeErr.Type)
		}
		return cfg, fmt.Errorf("not valid JSON: %v", err)
	}
	if cfg.NumHiddenLayers == nil && cfg.TextConfig != nil {
		text := *cfg.TextConfig
		if text.TorchDType == nil {
			text.TorchDType = cfg.TorchDType
		}
		if text.QuantizationConfig == nil {
			text.QuantizationConfig = cfg.QuantizationConfig
		}
		cfg = text
	}
	return cfg, nil
}

// parseMLA is DeepSeek's multi-head latent attention, when the config
// has a KV LoRA rank.
func parseMLA(cfg *hfConfig) (MLA, bool) {
	if cfg.KVLoraRank == nil || *cfg.KVLoraRank <= 0 {
		return MLA{}, false
	}
	get := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	return MLA{
		KVLoraRank: *cfg.KVLoraRank, QLoraRank: get(cfg.QLoraRank),
		QKNopeHeadDim: get(cfg.QKNopeHeadDim), QKRopeHeadDim: get(cfg.QKRopeHeadDim), VHeadDim: get(cfg.VHeadDim),
	}, true
}

// setMaxLength derives the model's length as vLLM does: the smallest of
// the length keys, 2048 when none is present, and rope scaling's factor
// (and, for yarn, its original length).
func (m *Model) setMaxLength(cfg *hfConfig) error {
	maxLenKeys := []struct {
		v   *int
		key string
	}{
		{cfg.MaxPositionEmbeddings, "max_position_embeddings"},
		{cfg.NPositions, "n_positions"},
		{cfg.MaxSeqLen, "max_seq_len"},
		{cfg.SeqLength, "seq_length"},
		{cfg.ModelMaxLength, "model_max_length"},
		{cfg.MaxSequenceLength, "max_sequence_length"},
		{cfg.MaxSeqLength, "max_seq_length"},
		{cfg.SeqLen, "seq_len"},
	}
	for _, k := range maxLenKeys {
		if k.v != nil && (m.maxLenKey == "" || *k.v < m.MaxPositionEmbeddings) {
			m.MaxPositionEmbeddings, m.maxLenKey = *k.v, k.key
		}
	}
	if m.maxLenKey == "" {
		// vLLM assumes 2048 (with a warning) when no key is present.
		m.MaxPositionEmbeddings, m.maxLenKey = 2048, "max_position_embeddings"
	}
	if cfg.ModelMaxLength != nil {
		m.modelMaxLength = *cfg.ModelMaxLength
	}
	rs := cfg.RopeScaling
	if rs == nil {
		return nil
	}
	ropeType := rs.Type
	if ropeType == "" {
		ropeType = rs.RopeType
	}
	switch ropeType {
	case "", "default", "mrope", "su", "longrope", "llama3":
		// vLLM does not scale the derived length for these.
		return nil
	}
	if rs.Factor == nil {
		return fmt.Errorf("rope_scaling of type %q has no factor", ropeType)
	}
	m.ropeFactor = *rs.Factor
	if ropeType == "yarn" && rs.OriginalMaxPositionEmbeddings != nil {
		m.MaxPositionEmbeddings = *rs.OriginalMaxPositionEmbeddings
	}
	return nil
}

// parseQuantization reads quantization_config in its GPTQ, AutoAWQ and
// FP8 spellings (the *_marlin methods are their checkpoints' formats), and
// which of the model's layers modules_to_not_convert leaves unquantized.
func parseQuantization(q *hfQuantization, layers int) (Quantization, error) {
	out := Quantization{Method: strings.ToLower(q.QuantMethod)}
	switch {
	case q.Bits != nil:
		out.Bits = *q.Bits
	case q.WBit != nil:
		out.Bits = *q.WBit
	}
	switch {
	case q.GroupSize != nil:
		out.GroupSize = *q.GroupSize
	case q.QGroupSize != nil:
		out.GroupSize = *q.QGroupSize
	}
	if len(q.WeightBlockSize) > 0 && q.WeightBlockSize[0] > 0 {
		out.WeightBlockSize = q.WeightBlockSize[0]
	}
	if out.Method == "gptq_marlin" || out.Method == "awq_marlin" {
		out.Method = strings.TrimSuffix(out.Method, "_marlin")
	}
	if out.Method == "fbgemm_fp8" {
		// Meta's FP8 format: per-channel FP8 weights and dynamic per-token
		// FP8 activations, which vLLM runs on the FP8 GEMMs it uses for fp8
		// checkpoints (FBGEMMFp8LinearMethod), W8A16 Marlin without FP8 units.
		out.Method = "fp8"
	}
	var err error
	out.SkippedAttentionLayers, out.SkippedMLPLayers, err = skippedLayers(q.ModulesToNotConvert, layers)
	return out, err
}

// skippedLayers counts the decoder layers whose attention projections and
// whose MLP modules_to_not_convert leaves unquantized. An entry covers a
// module when it names it or a module above it ("model.layers.0" covers
// that layer's every projection), so the full paths a saved config lists
// and the prefixes a conversion script passes count alike. Entries naming
// other modules (lm_head, a vision tower) change nothing perf models.
func skippedLayers(entries []string, layers int) (attention, mlp int, err error) {
	if len(entries) == 0 {
		return 0, 0, nil
	}
	covered := func(module string) bool {
		for _, e := range entries {
			e = strings.TrimSuffix(strings.TrimSpace(e), ".weight")
			if module == e || strings.HasPrefix(module, e+".") {
				return true
			}
		}
		return false
	}
	blocks := []struct {
		name    string
		modules []string
		count   *int
	}{
		{"self_attn", []string{"q_proj", "k_proj", "v_proj", "o_proj"}, &attention},
		{"mlp", []string{"gate_proj", "up_proj", "down_proj"}, &mlp},
	}
	for i := range layers {
		for _, b := range blocks {
			n := 0
			for _, proj := range b.modules {
				if covered(fmt.Sprintf("model.layers.%d.%s.%s", i, b.name, proj)) {
					n++
				}
			}
			switch n {
			case 0:
			case len(b.modules):
				*b.count++
			default:
				return 0, 0, fmt.Errorf("quantization_config.modules_to_not_convert leaves %d of layer %d's %d %s projections unquantized; perf models a layer's %s as wholly quantized or wholly not", n, i, len(b.modules), b.name, b.name)
			}
		}
	}
	return attention, mlp, nil
}

// pyFloat formats a float the way Python's str() does for the values vLLM
// puts in its messages: "0.9", "1.5", "2.0".
func pyFloat(f float64) string {
	s := fmt.Sprintf("%v", f)
	if !strings.ContainsAny(s, ".eEnN") {
		s += ".0"
	}
	return s
}
