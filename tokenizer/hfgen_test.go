package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// This file builds tokenizer.json files for the tests: a tiny BPE trained
// here on public-domain text, and HF conversions of the built-in tiktoken
// encodings. No third-party vocabulary file is involved.

// toByteLevel writes raw bytes in GPT-2's printable byte alphabet.
func toByteLevel(raw string) string {
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		b.WriteRune(byteLevelRunes[raw[i]])
	}
	return b.String()
}

// hfSpec is what a generated tokenizer.json holds; tokens are raw bytes.
type hfSpec struct {
	vocab        []string    // raw bytes by ID
	merges       [][2]string // raw bytes
	added        []hfAddedToken
	preTokenizer string // JSON
	normalizer   string // JSON, or "" for null
	mergesAsList bool   // [["a","b"]] instead of ["a b"]
	ignoreMerges bool
}

const (
	preGPT2   = `{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}`
	preLlama3 = `{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":%s},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}]}`
)

func splitPreTokenizer(pattern string) string {
	quoted, _ := json.Marshal(pattern)
	return fmt.Sprintf(preLlama3, quoted)
}

// jsonString marshals s the way tokenizers writes JSON: no HTML escaping.
func jsonString(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}

// render writes the spec as a tokenizer.json, vocab in ID order, one
// entry per line so that golden diffs stay readable.
func (s hfSpec) render() []byte {
	var b strings.Builder
	b.WriteString("{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [")
	for i, t := range s.added {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n    {\"id\": %d, \"content\": %s, \"single_word\": %v, \"lstrip\": %v, \"rstrip\": %v, \"normalized\": false, \"special\": %v}",
			t.ID, jsonString(t.Content), t.SingleWord, t.Lstrip, t.Rstrip, t.Special)
	}
	b.WriteString("\n  ],\n  \"normalizer\": ")
	if s.normalizer == "" {
		b.WriteString("null")
	} else {
		b.WriteString(s.normalizer)
	}
	fmt.Fprintf(&b, ",\n  \"pre_tokenizer\": %s,\n", s.preTokenizer)
	b.WriteString("  \"post_processor\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": false, \"use_regex\": true},\n")
	b.WriteString("  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": true, \"use_regex\": true},\n")
	fmt.Fprintf(&b, "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": null,\n    \"continuing_subword_prefix\": \"\",\n    \"end_of_word_suffix\": \"\",\n    \"fuse_unk\": false,\n    \"byte_fallback\": false,\n    \"ignore_merges\": %v,\n    \"vocab\": {", s.ignoreMerges)
	first := true
	for id, tok := range s.vocab {
		if tok == "" {
			continue
		}
		if !first {
			b.WriteString(",")
		}
		first = false
		fmt.Fprintf(&b, "\n      %s: %d", jsonString(toByteLevel(tok)), id)
	}
	b.WriteString("\n    },\n    \"merges\": [")
	for i, m := range s.merges {
		if i > 0 {
			b.WriteString(",")
		}
		if s.mergesAsList {
			fmt.Fprintf(&b, "\n      [%s, %s]", jsonString(toByteLevel(m[0])), jsonString(toByteLevel(m[1])))
		} else {
			fmt.Fprintf(&b, "\n      %s", jsonString(toByteLevel(m[0])+" "+toByteLevel(m[1])))
		}
	}
	b.WriteString("\n    ]\n  }\n}\n")
	return []byte(b.String())
}

// byteVocab returns the 256 single-byte tokens in GPT-2's ID order, which
// is the order of their printable characters.
func byteVocab() []string {
	order := make([]int, 256)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(byteLevelRunes[a]) - int(byteLevelRunes[b]) })
	vocab := make([]string, 256)
	for id, b := range order {
		vocab[id] = string([]byte{byte(b)})
	}
	return vocab
}

// trainBPE learns numMerges merges from corpus, GPT-2 style: words come
// from the GPT-2 split pattern, the most frequent adjacent pair merges
// next, ties go to the smaller pair. Deterministic.
func trainBPE(corpus string, numMerges int) (vocab []string, merges [][2]string) {
	type key struct {
		corpus string
		n      int
	}
	type result struct {
		vocab  []string
		merges [][2]string
	}
	k := key{corpus, numMerges}
	if r, ok := trained.Load(k); ok {
		return slices.Clone(r.(result).vocab), slices.Clone(r.(result).merges)
	}
	vocab, merges = trainBPEUncached(corpus, numMerges)
	trained.Store(k, result{vocab, merges})
	return slices.Clone(vocab), slices.Clone(merges)
}

// trained memoizes trainBPE: the golden and round-trip tests train on the
// same text.
var trained sync.Map

func trainBPEUncached(corpus string, numMerges int) (vocab []string, merges [][2]string) {
	vocab = byteVocab()
	known := map[string]bool{}
	for _, tok := range vocab {
		known[tok] = true
	}
	counts := map[string]int{}
	gpt2Scanner{}.split(corpus, func(p string) { counts[p]++ })
	type word struct {
		parts []string
		count int
	}
	words := make([]word, 0, len(counts))
	pairCounts := map[[2]string]int{}
	addPairs := func(w word, sign int) {
		for i := 0; i+1 < len(w.parts); i++ {
			pairCounts[[2]string{w.parts[i], w.parts[i+1]}] += sign * w.count
		}
	}
	for w, c := range counts {
		parts := make([]string, len(w))
		for i := range len(w) {
			parts[i] = w[i : i+1]
		}
		words = append(words, word{parts, c})
		addPairs(words[len(words)-1], 1)
	}
	for range numMerges {
		var best [2]string
		bestCount := 0
		for p, c := range pairCounts {
			if c > bestCount || (c == bestCount && (p[0] < best[0] || (p[0] == best[0] && p[1] < best[1]))) {
				best, bestCount = p, c
			}
		}
		if bestCount < 2 {
			break
		}
		merges = append(merges, best)
		merged := best[0] + best[1]
		if !known[merged] {
			known[merged] = true
			vocab = append(vocab, merged)
		}
		for wi := range words {
			w := words[wi]
			has := false
			for i := 0; i+1 < len(w.parts); i++ {
				if w.parts[i] == best[0] && w.parts[i+1] == best[1] {
					has = true
					break
				}
			}
			if !has {
				continue
			}
			addPairs(w, -1)
			out := make([]string, 0, len(w.parts))
			for i := 0; i < len(w.parts); i++ {
				if i+1 < len(w.parts) && w.parts[i] == best[0] && w.parts[i+1] == best[1] {
					out = append(out, merged)
					i++
					continue
				}
				out = append(out, w.parts[i])
			}
			words[wi].parts = out
			addPairs(words[wi], 1)
		}
		for p, c := range pairCounts {
			if c == 0 {
				delete(pairCounts, p)
			}
		}
	}
	return vocab, merges
}

// tinyCorpusMerges is how many merges the shipped tiny tokenizers learn.
const tinyCorpusMerges = 400

// tinyGPT2Spec and tinyLlama3Spec are the shipped test tokenizers:
// trained on the sonnets, with GPT-2's and Llama 3's file layouts.
func tinyGPT2Spec(corpus string) hfSpec {
	vocab, merges := trainBPE(corpus, tinyCorpusMerges)
	return hfSpec{
		vocab:        vocab,
		merges:       merges,
		added:        []hfAddedToken{{ID: len(vocab), Content: "<|endoftext|>", Special: true}},
		preTokenizer: preGPT2,
	}
}

func tinyLlama3Spec(corpus string) hfSpec {
	vocab, merges := trainBPE(corpus, tinyCorpusMerges)
	n := len(vocab)
	return hfSpec{
		vocab:  vocab,
		merges: merges,
		added: []hfAddedToken{
			{ID: n, Content: "<|begin_of_text|>", Special: true},
			{ID: n + 1, Content: "<|end_of_text|>", Special: true},
			{ID: n + 2, Content: "<|reserved_special_token_0|>", Special: true},
			{ID: n + 3, Content: "<tool>", Special: false},
		},
		preTokenizer: splitPreTokenizer(patternCL100K),
		mergesAsList: true,
		ignoreMerges: true,
	}
}

// referenceBPE is the textbook O(n²) BPE loop, used to derive merges from
// tiktoken ranks (as transformers' TikTokenConverter does) and as an
// independent check of the heap-based merge. maxRank < 0 means no limit.
func referenceBPE(ranks map[string]int32, piece string, maxRank int32) []string {
	parts := make([]string, len(piece))
	for i := range len(piece) {
		parts[i] = piece[i : i+1]
	}
	for {
		best, bestRank := -1, int32(-1)
		for i := 0; i+1 < len(parts); i++ {
			if r, ok := ranks[parts[i]+parts[i+1]]; ok && (best < 0 || r < bestRank) {
				best, bestRank = i, r
			}
		}
		if best < 0 || (maxRank >= 0 && bestRank >= maxRank) {
			return parts
		}
		parts = slices.Replace(parts, best, best+2, parts[best]+parts[best+1])
	}
}

// hfFromBuiltin converts a loaded tiktoken encoding to tokenizer.json form
// with one merge per multi-byte token.
func hfFromBuiltin(m *bpeModel, preTokenizer string, ignoreMerges bool) hfSpec {
	spec := hfSpec{preTokenizer: preTokenizer, ignoreMerges: ignoreMerges}
	spec.vocab = make([]string, len(m.tokenBytes))
	special := map[int]bool{}
	for _, id := range m.specialIDs {
		special[id] = true
	}
	for id, tok := range m.tokenBytes {
		if !m.assigned[id] {
			continue
		}
		if special[id] {
			spec.added = append(spec.added, hfAddedToken{ID: id, Content: tok, Special: true})
			continue
		}
		spec.vocab[id] = tok
		if len(tok) > 1 {
			if parts := referenceBPE(m.pieceIDs, tok, int32(id)); len(parts) == 2 {
				spec.merges = append(spec.merges, [2]string{parts[0], parts[1]})
			}
		}
	}
	return spec
}
