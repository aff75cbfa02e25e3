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
}

// LinearParams is N_lin: the parameters of the attention projections and
// the SwiGLU MLP summed over all layers (norms and biases are ignored,
// < 0.1% of any catalog model).
func (m Model) LinearParams() int64 {
	return int64(m.Layers) * m.linearParamsPerLayer()
}

func (m Model) linearParamsPerLayer() int64 {
	d, hd := int64(m.Hidden), int64(m.HeadDim)
	q := d * int64(m.Heads) * hd
	kv := 2 * d * int64(m.KVHeads) * hd
	o := int64(m.Heads) * hd * d
	mlp := 3 * d * int64(m.Intermediate)
	return q + kv + o + mlp
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
// at their quantized width, embedding and lm_head in 16 bits (GPTQ/AWQ/FP8
// checkpoints keep both unquantized), the lm_head only when untied.
func (m Model) WeightBytes() int64 {
	return int64(math.Round(float64(m.LinearParams())*m.linearBytesPerParam())) +
		m.embeddingAndHeadBytes()
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

// KVBytesPerToken is 2·L·H_kv·d_h·b_kv for the whole model on one GPU;
// kvCacheDType is "auto" (model dtype, 2 bytes) or "fp8" (1 byte).
func (m Model) KVBytesPerToken(kvCacheDType string) int64 {
	b := int64(activationBytes)
	if isFP8KVCache(kvCacheDType) {
		b = 1
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
	if m.Heads%m.KVHeads != 0 {
		return fmt.Errorf("num_attention_heads (%d) is not a multiple of num_key_value_heads (%d)", m.Heads, m.KVHeads)
	}
	switch m.DType {
	case "bfloat16", "float16", "float32":
	default:
		return fmt.Errorf("torch_dtype %q is not supported; use bfloat16, float16 or float32", m.DType)
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

// modelCatalog holds the Hugging Face configs of the models servebench
// knows by name. Base and instruct checkpoints differ only in
// max_position_embeddings, so they are separate entries.
var modelCatalog = func() []catalogModel {
	gptq := qwen2("Qwen2.5-7B-Instruct-GPTQ-Int4", 32768)
	gptq.model.DType = "float16"
	gptq.model.Quantization = Quantization{Method: "gptq", Bits: 4, GroupSize: 128}
	return []catalogModel{
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
// A path that exists wins over a catalog name, as in vLLM.
func LookupModel(nameOrPath string) (Model, error) {
	if info, err := os.Stat(nameOrPath); err == nil && nameOrPath != "" {
		path := nameOrPath
		if info.IsDir() {
			path = filepath.Join(path, "config.json")
		}
		return LoadModelConfig(path)
	}
	if m, ok := lookupCatalogModel(nameOrPath); ok {
		return m, nil
	}
	if strings.HasSuffix(strings.ToLower(nameOrPath), ".json") {
		return Model{}, fmt.Errorf("perf: model config %s: file not found; give the path to an existing Hugging Face config.json", nameOrPath)
	}
	return Model{}, fmt.Errorf("perf: unknown model %q; known models: %s; or pass the path to the model's Hugging Face config.json (or its directory)",
		nameOrPath, strings.Join(Models(), ", "))
}

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
}

// ParseModelConfig parses the bytes of a Hugging Face config.json; name
// (the file path) appears in every error.
func ParseModelConfig(data []byte, name string) (Model, error) {
	fail := func(format string, args ...any) (Model, error) {
		return Model{}, fmt.Errorf("perf: model config %s: %s", name, fmt.Sprintf(format, args...))
	}
	var cfg hfConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return fail("field %q has a %s where a %s is expected", typeErr.Field, typeErr.Value, typeErr.Type)
		}
		return fail("not valid JSON: %v", err)
	}
	// Multimodal checkpoints nest the language model's fields, as vLLM's
	// get_hf_text_config does.
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
			return fail("%s is missing; servebench models dense decoder-only (Llama/Qwen2-style) configs", r.field)
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

	// vLLM takes the smallest of these keys as the model's length.
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
	if rs := cfg.RopeScaling; rs != nil {
		ropeType := rs.Type
		if ropeType == "" {
			ropeType = rs.RopeType
		}
		switch ropeType {
		case "", "default", "mrope", "su", "longrope", "llama3":
			// vLLM does not scale the derived length for these.
		default:
			if rs.Factor == nil {
				return fail("rope_scaling of type %q has no factor", ropeType)
			}
			m.ropeFactor = *rs.Factor
			if ropeType == "yarn" && rs.OriginalMaxPositionEmbeddings != nil {
				m.MaxPositionEmbeddings = *rs.OriginalMaxPositionEmbeddings
			}
		}
	}
	if q := cfg.QuantizationConfig; q != nil {
		m.Quantization.Method = strings.ToLower(q.QuantMethod)
		switch {
		case q.Bits != nil:
			m.Quantization.Bits = *q.Bits
		case q.WBit != nil:
			m.Quantization.Bits = *q.WBit
		}
		switch {
		case q.GroupSize != nil:
			m.Quantization.GroupSize = *q.GroupSize
		case q.QGroupSize != nil:
			m.Quantization.GroupSize = *q.QGroupSize
		}
		if m.Quantization.Method == "gptq_marlin" || m.Quantization.Method == "awq_marlin" {
			m.Quantization.Method = strings.TrimSuffix(m.Quantization.Method, "_marlin")
		}
	}
	if err := m.validate(); err != nil {
		return fail("%v", err)
	}
	return m, nil
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
