package tokenizer

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// builtinEncoding describes one tiktoken encoding shipped in the binary by
// tiktoken-go-loader. Pattern, special tokens and n_vocab are tiktoken's
// (openai_public.py).
type builtinEncoding struct {
	asset    string
	pattern  string
	specials map[string]int
	nVocab   int
}

var builtinEncodings = map[string]builtinEncoding{
	"r50k_base": {
		asset:    "r50k_base.tiktoken",
		pattern:  patternGPT2,
		specials: map[string]int{"<|endoftext|>": 50256},
		nVocab:   50257,
	},
	"p50k_base": {
		asset:    "p50k_base.tiktoken",
		pattern:  patternGPT2,
		specials: map[string]int{"<|endoftext|>": 50256},
		nVocab:   50281,
	},
	"cl100k_base": {
		asset:   "cl100k_base.tiktoken",
		pattern: patternCL100K,
		specials: map[string]int{
			"<|endoftext|>":   100257,
			"<|fim_prefix|>":  100258,
			"<|fim_middle|>":  100259,
			"<|fim_suffix|>":  100260,
			"<|endofprompt|>": 100276,
		},
		nVocab: 100277,
	},
	"o200k_base": {
		asset:    "o200k_base.tiktoken",
		pattern:  patternO200K,
		specials: map[string]int{"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
		nVocab:   200019,
	},
}

// builtinAliases maps other accepted names to an encoding. GPT-2's token
// IDs are r50k_base's.
var builtinAliases = map[string]string{"gpt2": "r50k_base"}

// builtinNames is the order Builtins reports and error messages list.
var builtinNames = []string{"cl100k_base", "o200k_base", "p50k_base", "r50k_base", "gpt2"}

// loadedEncoding parses one encoding at most once per process: parsing
// o200k takes a few hundred milliseconds and the result is immutable.
type loadedEncoding struct {
	once  sync.Once
	model *bpeModel
	err   error
}

// builtinCache has a fixed set of keys; only the values fill in, each under
// its own sync.Once.
var builtinCache = func() map[string]*loadedEncoding {
	m := make(map[string]*loadedEncoding, len(builtinEncodings))
	for name := range builtinEncodings {
		m[name] = &loadedEncoding{}
	}
	return m
}()

// Builtins lists the encodings compiled into the binary, usable as a
// tokenizer spec without any file or network access.
func Builtins() []string { return append([]string(nil), builtinNames...) }

func isBuiltin(name string) bool {
	_, ok := builtinEncodings[name]
	_, alias := builtinAliases[name]
	return ok || alias
}

// Builtin returns the named built-in encoding (see Builtins). The first
// call for an encoding parses it; later calls share the result.
func Builtin(name string) (Tokenizer, error) {
	encoding := name
	if target, ok := builtinAliases[name]; ok {
		encoding = target
	}
	spec, ok := builtinEncodings[encoding]
	if !ok {
		return nil, fmt.Errorf("tokenizer %q: not a built-in encoding; use one of %s", name, strings.Join(builtinNames, ", "))
	}
	entry := builtinCache[encoding]
	entry.once.Do(func() { entry.model, entry.err = loadBuiltin(encoding, spec) })
	if entry.err != nil {
		return nil, entry.err
	}
	if name != encoding {
		return aliasTokenizer{entry.model, name}, nil
	}
	return entry.model, nil
}

// aliasTokenizer reports the name the user asked for ("gpt2").
type aliasTokenizer struct {
	*bpeModel
	alias string
}

func (a aliasTokenizer) Name() string { return a.alias }

func loadBuiltin(name string, spec builtinEncoding) (*bpeModel, error) {
	data, err := assets.Assets.ReadFile(spec.asset)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: read embedded ranks: %w", name, err)
	}
	m := &bpeModel{
		name:            name,
		pre:             knownScanners[spec.pattern],
		pieceIDs:        make(map[string]int32, len(data)/16),
		wholePieceFirst: true,
		unkID:           -1,
		tokenBytes:      make([]string, spec.nVocab),
		assigned:        make([]bool, spec.nVocab),
	}
	if err := parseTiktokenRanks(string(data), m); err != nil {
		return nil, fmt.Errorf("tokenizer %s: embedded %s: %w", name, spec.asset, err)
	}
	m.twoByteIDs = make([]int32, 1<<16)
	for i := range m.twoByteIDs {
		m.twoByteIDs[i] = -1
	}
	for token, id := range m.pieceIDs {
		if len(token) == 2 {
			m.twoByteIDs[int(token[0])<<8|int(token[1])] = id
		}
	}
	for i := range m.byteIDs {
		id, ok := m.pieceIDs[string([]byte{byte(i)})]
		if !ok {
			return nil, fmt.Errorf("tokenizer %s: embedded %s has no token for byte %#02x", name, spec.asset, i)
		}
		m.byteIDs[i] = id
	}
	special := make(map[int]bool, len(spec.specials))
	var added []addedToken
	for content, id := range spec.specials {
		if id >= spec.nVocab || m.assigned[id] {
			return nil, fmt.Errorf("tokenizer %s: special token %s ID %d collides with the ranks", name, content, id)
		}
		m.tokenBytes[id], m.assigned[id] = content, true
		special[id] = true
		added = append(added, addedToken{content: content, id: id})
	}
	m.added = newAddedMatcher(added)
	m.finish(special)
	return m, nil
}

// parseTiktokenRanks reads tiktoken's "<base64 token> <rank>" lines.
func parseTiktokenRanks(data string, m *bpeModel) error {
	buf := make([]byte, 0, 256)
	for lineNo := 1; data != ""; lineNo++ {
		var line string
		line, data, _ = strings.Cut(data, "\n")
		if line == "" {
			continue
		}
		encoded, rankText, ok := strings.Cut(line, " ")
		if !ok {
			return fmt.Errorf("line %d: want \"<base64> <rank>\"", lineNo)
		}
		rank, err := strconv.Atoi(rankText)
		if err != nil || rank < 0 || rank >= len(m.tokenBytes) {
			return fmt.Errorf("line %d: rank %q is not in 0..%d", lineNo, rankText, len(m.tokenBytes)-1)
		}
		buf = buf[:base64.StdEncoding.DecodedLen(len(encoded))]
		n, err := base64.StdEncoding.Decode(buf, []byte(encoded))
		if err != nil {
			return fmt.Errorf("line %d: %w", lineNo, err)
		}
		token := string(buf[:n])
		if m.assigned[rank] {
			return fmt.Errorf("line %d: rank %d appears twice", lineNo, rank)
		}
		m.tokenBytes[rank], m.assigned[rank] = token, true
		m.pieceIDs[token] = int32(rank)
	}
	return nil
}
