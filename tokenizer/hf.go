package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// maxTokenID bounds IDs read from a tokenizer.json, so that a corrupt file
// cannot make the loader allocate gigabytes. Real vocabularies stay under
// a few hundred thousand.
const maxTokenID = 1 << 24

// LoadTokenizerJSON loads a Hugging Face tokenizer.json (or a directory
// containing one). Byte-level BPE is supported: GPT-2, RoBERTa, Llama 3,
// Qwen2 and friends. The tokenizer's Name is path as given.
func LoadTokenizerJSON(path string) (Tokenizer, error) {
	file := path
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		file = filepath.Join(path, "tokenizer.json")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %q: %w", path, err)
	}
	m, err := parseTokenizerJSON(file, data)
	if err != nil {
		return nil, err
	}
	m.name = path
	return m, nil
}

type hfFile struct {
	AddedTokens  []hfAddedToken  `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Decoder      json.RawMessage `json:"decoder"`
	Model        json.RawMessage `json:"model"`
}

type hfAddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	Lstrip     bool   `json:"lstrip"`
	Rstrip     bool   `json:"rstrip"`
	Special    bool   `json:"special"`
}

type hfModel struct {
	Type                    string          `json:"type"`
	Vocab                   map[string]int  `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Dropout                 *float64        `json:"dropout"`
}

// hfComponent holds the fields of every normalizer, pre-tokenizer and
// decoder type this package understands.
type hfComponent struct {
	Type           string            `json:"type"`
	Normalizers    []json.RawMessage `json:"normalizers"`
	Pretokenizers  []json.RawMessage `json:"pretokenizers"`
	AddPrefixSpace *bool             `json:"add_prefix_space"`
	UseRegex       *bool             `json:"use_regex"`
	Pattern        *struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior         string `json:"behavior"`
	Invert           bool   `json:"invert"`
	IndividualDigits bool   `json:"individual_digits"`
}

// supportedKinds says what is supported whenever a file is not byte-level
// BPE.
const supportedKinds = `supported: byte-level "BPE" (GPT-2, RoBERTa, Llama 3, Qwen2 style); WordPiece, Unigram, WordLevel and sentencepiece-style BPE (Llama 2, Mistral) are not`

func parseTokenizerJSON(file string, data []byte) (*bpeModel, error) {
	m, err := buildHF(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer file %s: %w", file, err)
	}
	m.name = file
	return m, nil
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

func jsonError(what string, err error) error {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return fmt.Errorf("%s: invalid JSON at byte %d: %w", what, syntax.Offset, err)
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fmt.Errorf("%s: field %q holds JSON %s, want %s", what, typeErr.Field, typeErr.Value, typeErr.Type)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func buildHF(data []byte) (*bpeModel, error) {
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, jsonError("not a tokenizer.json", err)
	}
	model, err := parseBPEModel(f.Model)
	if err != nil {
		return nil, err
	}

	pre, err := buildPreTokenizer(f.PreTokenizer)
	if err != nil {
		return nil, err
	}
	if err := checkDecoder(f.Decoder); err != nil {
		return nil, err
	}
	normalize, err := buildNormalizer(f.Normalizer)
	if err != nil {
		return nil, err
	}

	size, err := tokenIDSpan(model.Vocab, f.AddedTokens)
	if err != nil {
		return nil, err
	}
	m := &bpeModel{
		normalize:       normalize,
		pre:             pre,
		pieceIDs:        make(map[string]int32, len(model.Vocab)),
		wholePieceFirst: model.IgnoreMerges,
		unkID:           -1,
		fuseUnk:         model.FuseUnk,
		tokenBytes:      make([]string, size),
		assigned:        make([]bool, size),
	}
	m.assignVocab(model.Vocab)
	m.assignByteIDs(model.Vocab, model.ByteFallback)
	if model.UnkToken != nil {
		id, ok := model.Vocab[*model.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model unk_token %q is not in the vocab", *model.UnkToken)
		}
		m.unkID = int32(id)
	}

	if m.pairs, err = buildMerges(model.Merges, model.Vocab); err != nil {
		return nil, err
	}

	special, err := m.assignAddedTokens(f.AddedTokens)
	if err != nil {
		return nil, err
	}
	m.finish(special)
	return m, nil
}

// parseBPEModel reads the "model" section and refuses every BPE option
// this package does not implement, before anything is built from it.
func parseBPEModel(raw json.RawMessage) (hfModel, error) {
	if isNull(raw) {
		return hfModel{}, fmt.Errorf(`no "model" section; %s`, supportedKinds)
	}
	// The type decides how the rest of the model parses (Unigram's vocab
	// is a list), so it is read on its own first.
	var header struct {
		Type   string          `json:"type"`
		Merges json.RawMessage `json:"merges"`
	}
	if err := json.Unmarshal(raw, &header); err != nil {
		return hfModel{}, jsonError("model", err)
	}
	if header.Type == "" && !isNull(header.Merges) {
		header.Type = "BPE" // tokenizers infers the type from the fields too
	}
	if header.Type != "BPE" {
		return hfModel{}, fmt.Errorf("model type %q is not supported; %s", header.Type, supportedKinds)
	}
	var model hfModel
	if err := json.Unmarshal(raw, &model); err != nil {
		return hfModel{}, jsonError("model", err)
	}
	if model.Dropout != nil && *model.Dropout > 0 {
		return hfModel{}, fmt.Errorf("model dropout %g makes encoding random; set it to null", *model.Dropout)
	}
	if p := model.ContinuingSubwordPrefix; p != nil && *p != "" {
		return hfModel{}, fmt.Errorf("model continuing_subword_prefix %q is not supported; %s", *p, supportedKinds)
	}
	if s := model.EndOfWordSuffix; s != nil && *s != "" {
		return hfModel{}, fmt.Errorf("model end_of_word_suffix %q is not supported; %s", *s, supportedKinds)
	}
	return model, nil
}

// tokenIDSpan returns one more than the largest token ID, which sizes the
// per-ID arrays.
func tokenIDSpan(vocab map[string]int, added []hfAddedToken) (int, error) {
	size := 0
	for token, id := range vocab {
		if id < 0 || id >= maxTokenID {
			return 0, fmt.Errorf("vocab token %q has ID %d, outside 0..%d", token, id, maxTokenID-1)
		}
		size = max(size, id+1)
	}
	for _, t := range added {
		if t.ID < 0 || t.ID >= maxTokenID {
			return 0, fmt.Errorf("added token %q has ID %d, outside 0..%d", t.Content, t.ID, maxTokenID-1)
		}
		size = max(size, t.ID+1)
	}
	// Arrays are sized by the largest ID; refuse files whose IDs are mostly
	// holes rather than allocate for IDs nobody uses.
	if tokens := len(vocab) + len(added); size > 2*tokens+1024 {
		return 0, fmt.Errorf("token IDs run up to %d for only %d tokens; the file looks corrupt", size-1, tokens)
	}
	return size, nil
}

// assignVocab fills tokenBytes and pieceIDs from the byte-level vocab;
// the arrays must already span every ID in vocab.
func (m *bpeModel) assignVocab(vocab map[string]int) {
	// Two vocab strings with one ID would make decoding depend on map
	// order; keep the smaller string so loading is deterministic.
	for token, id := range vocab {
		if m.assigned[id] && m.tokenBytes[id] <= token {
			continue
		}
		m.tokenBytes[id], m.assigned[id] = token, true
	}
	for id, token := range m.tokenBytes {
		if !m.assigned[id] {
			continue
		}
		raw, ok := fromByteLevel(token)
		if ok {
			m.pieceIDs[raw] = int32(id)
		}
		m.tokenBytes[id] = raw
	}
}

// assignByteIDs gives each byte the token that encodes it alone, from the
// byte-level vocab or, with byteFallback, from its <0xNN> token; -1 when
// neither exists.
func (m *bpeModel) assignByteIDs(vocab map[string]int, byteFallback bool) {
	for b := range m.byteIDs {
		m.byteIDs[b] = -1
		if id, ok := m.pieceIDs[string([]byte{byte(b)})]; ok {
			m.byteIDs[b] = id
		} else if byteFallback {
			if id, ok := vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
				m.byteIDs[b] = int32(id)
			}
		}
	}
}

// assignAddedTokens records the added tokens, which override the vocab at
// their IDs, and returns the IDs marked special.
func (m *bpeModel) assignAddedTokens(tokens []hfAddedToken) (map[int]bool, error) {
	special := make(map[int]bool)
	added := make([]addedToken, 0, len(tokens))
	for _, t := range tokens {
		if t.Content == "" {
			return nil, fmt.Errorf("added token ID %d has empty content", t.ID)
		}
		raw, _ := fromByteLevel(t.Content)
		m.tokenBytes[t.ID], m.assigned[t.ID] = raw, true
		if t.Special {
			special[t.ID] = true
		}
		added = append(added, addedToken{content: t.Content, id: t.ID, lstrip: t.Lstrip, rstrip: t.Rstrip, singleWord: t.SingleWord})
	}
	m.added = newAddedMatcher(added)
	return special, nil
}

func buildMerges(raw json.RawMessage, vocab map[string]int) (map[uint64]uint64, error) {
	var pairs [][2]string
	if !isNull(raw) {
		var lines []string
		if err := json.Unmarshal(raw, &lines); err == nil {
			pairs = make([][2]string, len(lines))
			for i, line := range lines {
				parts := strings.Split(line, " ")
				if len(parts) != 2 {
					return nil, fmt.Errorf("merge %d %q: want two tokens separated by one space", i, line)
				}
				pairs[i] = [2]string{parts[0], parts[1]}
			}
		} else if err := json.Unmarshal(raw, &pairs); err != nil {
			return nil, errors.New(`model merges: want a list of "a b" strings or of ["a", "b"] pairs`)
		}
	}
	merges := make(map[uint64]uint64, len(pairs))
	for rank, pair := range pairs {
		left, ok1 := vocab[pair[0]]
		right, ok2 := vocab[pair[1]]
		merged, ok3 := vocab[pair[0]+pair[1]]
		switch {
		case !ok1:
			return nil, fmt.Errorf("merge %d (%q %q): %q is not in the vocab", rank, pair[0], pair[1], pair[0])
		case !ok2:
			return nil, fmt.Errorf("merge %d (%q %q): %q is not in the vocab", rank, pair[0], pair[1], pair[1])
		case !ok3:
			return nil, fmt.Errorf("merge %d (%q %q): the merged token %q is not in the vocab", rank, pair[0], pair[1], pair[0]+pair[1])
		case rank >= maxTokenID:
			return nil, fmt.Errorf("more than %d merges", maxTokenID)
		}
		merges[uint64(left)<<32|uint64(right)] = uint64(rank)<<32 | uint64(merged)
	}
	return merges, nil
}

func buildNormalizer(raw json.RawMessage) (func(string) string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, jsonError("normalizer", err)
	}
	switch c.Type {
	case "NFC":
		return norm.NFC.String, nil
	case "NFD":
		return norm.NFD.String, nil
	case "NFKC":
		return norm.NFKC.String, nil
	case "NFKD":
		return norm.NFKD.String, nil
	case "Lowercase":
		return strings.ToLower, nil
	case "Sequence":
		var steps []func(string) string
		for _, step := range c.Normalizers {
			f, err := buildNormalizer(step)
			if err != nil {
				return nil, err
			}
			if f != nil {
				steps = append(steps, f)
			}
		}
		if len(steps) == 0 {
			return nil, nil
		}
		return func(s string) string {
			for _, f := range steps {
				s = f(s)
			}
			return s
		}, nil
	}
	return nil, fmt.Errorf("normalizer %q is not supported; supported: NFC, NFD, NFKC, NFKD, Lowercase, Sequence", c.Type)
}

// buildPreTokenizer accepts ByteLevel alone, or a Sequence of Split and
// Digits steps ending in ByteLevel: the shape every byte-level BPE has.
func buildPreTokenizer(raw json.RawMessage) (pretokenizer, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("pre_tokenizer is null, so this is not byte-level BPE; %s", supportedKinds)
	}
	steps, err := flattenPreTokenizers(raw)
	if err != nil {
		return nil, err
	}
	if len(steps) == 0 || steps[len(steps)-1].Type != "ByteLevel" {
		return nil, fmt.Errorf("pre_tokenizer does not end in ByteLevel, so this is not byte-level BPE; %s", supportedKinds)
	}
	var seq sequenceSplitter
	for i, c := range steps {
		switch c.Type {
		case "ByteLevel":
			if i != len(steps)-1 {
				return nil, errors.New("pre_tokenizer has a ByteLevel step before its last step; only a final ByteLevel is supported")
			}
			seq = append(seq, byteLevelSplitter{addPrefixSpace: c.AddPrefixSpace == nil || *c.AddPrefixSpace, useRegex: c.UseRegex == nil || *c.UseRegex})
		case "Split":
			s, err := buildSplit(c)
			if err != nil {
				return nil, err
			}
			seq = append(seq, s)
		case "Digits":
			seq = append(seq, digitsSplitter{individual: c.IndividualDigits})
		default:
			return nil, fmt.Errorf("pre_tokenizer %q is not supported; supported: ByteLevel, Split, Digits, Sequence", c.Type)
		}
	}
	if len(seq) == 1 {
		return seq[0], nil
	}
	return seq, nil
}

func flattenPreTokenizers(raw json.RawMessage) ([]hfComponent, error) {
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, jsonError("pre_tokenizer", err)
	}
	if c.Type != "Sequence" {
		return []hfComponent{c}, nil
	}
	var out []hfComponent
	for _, step := range c.Pretokenizers {
		if isNull(step) {
			continue
		}
		inner, err := flattenPreTokenizers(step)
		if err != nil {
			return nil, err
		}
		out = append(out, inner...)
	}
	return out, nil
}

func buildSplit(c hfComponent) (pretokenizer, error) {
	behavior, err := parseBehavior(c.Behavior)
	if err != nil {
		return nil, fmt.Errorf("pre_tokenizer Split: %w", err)
	}
	var pattern string
	switch {
	case c.Pattern != nil && c.Pattern.Regex != nil:
		pattern = *c.Pattern.Regex
	case c.Pattern != nil && c.Pattern.String != nil:
		pattern = regexp2.Escape(*c.Pattern.String)
	default:
		return nil, errors.New(`pre_tokenizer Split: "pattern" needs a "Regex" or "String"`)
	}
	if scanner, ok := knownScanners[pattern]; ok && behavior == behaviorIsolated && !c.Invert {
		return scanner, nil
	}
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("pre_tokenizer Split: pattern %q: %w", pattern, err)
	}
	return regexSplitter{re: re, behavior: behavior, invert: c.Invert}, nil
}

func checkDecoder(raw json.RawMessage) error {
	if isNull(raw) {
		return nil // a byte-level pre-tokenizer implies byte-level decoding
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return jsonError("decoder", err)
	}
	if c.Type != "ByteLevel" {
		return fmt.Errorf("decoder %q is not supported; byte-level BPE needs the ByteLevel decoder", c.Type)
	}
	return nil
}

// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the rest
// are shifted to U+0100 and up so every byte has a visible character.
var byteLevelRunes, byteLevelBytes = func() ([256]rune, map[rune]byte) {
	var runes [256]rune
	inverse := make(map[rune]byte, 256)
	next := rune(256)
	for b := range 256 {
		printable := ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF)
		if printable {
			runes[b] = rune(b)
		} else {
			runes[b] = next
			next++
		}
		inverse[runes[b]] = byte(b)
	}
	return runes, inverse
}()

// fromByteLevel maps a token written in the byte-level alphabet back to
// raw bytes. A token with characters outside the alphabet (some added
// tokens) is its own UTF-8, as tokenizers' ByteLevel decoder treats it.
func fromByteLevel(token string) (string, bool) {
	out := make([]byte, 0, len(token))
	for _, r := range token {
		b, ok := byteLevelBytes[r]
		if !ok {
			return token, false
		}
		out = append(out, b)
	}
	return string(out), true
}
