package tokenizer

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// A pretokenizer cuts text into the pieces that BPE then encodes one by one.
// emit receives the pieces in order; empty pieces are never emitted.
type pretokenizer interface {
	split(text string, emit func(piece string))
}

// The split patterns of the known BPE families. They are kept verbatim so
// that a tokenizer.json carrying one of them gets the hand-written scanner,
// which is an order of magnitude faster than regexp2 and is checked against
// regexp2 by the tests.
const (
	patternGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// cl100k_base; also Llama-3's Split pattern.
	patternCL100K = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// Qwen2's Split pattern: cl100k with one digit per piece.
	patternQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patternO200K = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// knownScanners maps a split pattern to its hand-written equivalent.
var knownScanners = map[string]pretokenizer{
	patternGPT2:   gpt2Scanner{},
	patternCL100K: cl100kScanner{maxDigits: 3},
	patternQwen2:  cl100kScanner{maxDigits: 1},
	patternO200K:  o200kScanner{},
}

// Character classes as regexp2 defines them: \s is unicode.IsSpace, \p{X}
// is unicode.Is(unicode.X, r). ASCII goes through a table.
const (
	clsSpace = 1 << iota
	clsLetter
	clsNumber
	clsUpperish // \p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}
	clsLowerish // \p{Ll}\p{Lm}\p{Lo}\p{M}
)

var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = slowClass(r)
	}
	return t
}()

func slowClass(r rune) uint8 {
	var c uint8
	if unicode.IsSpace(r) {
		c |= clsSpace
	}
	if unicode.Is(unicode.L, r) {
		c |= clsLetter
	}
	if unicode.Is(unicode.N, r) {
		c |= clsNumber
	}
	mark := unicode.Is(unicode.M, r)
	bothCases := unicode.Is(unicode.Lm, r) || unicode.Is(unicode.Lo, r) || mark
	if bothCases || unicode.Is(unicode.Lu, r) || unicode.Is(unicode.Lt, r) {
		c |= clsUpperish
	}
	if bothCases || unicode.Is(unicode.Ll, r) {
		c |= clsLowerish
	}
	return c
}

func classOf(r rune) uint8 {
	if r < utf8.RuneSelf {
		return asciiClass[r]
	}
	return slowClass(r)
}

// runeAt decodes the rune at byte offset i; at the end of text it returns
// (-1, 0) so that every class test on it fails.
func runeAt(text string, i int) (rune, int) {
	if i >= len(text) {
		return -1, 0
	}
	if c := text[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(text[i:])
}

func classAt(text string, i int) (uint8, rune, int) {
	r, n := runeAt(text, i)
	if n == 0 {
		return 0, r, 0
	}
	return classOf(r), r, n
}

// runWhile returns the end of the longest run from i whose runes all have
// one of the class bits in want.
func runWhile(text string, i int, want uint8) int {
	for i < len(text) {
		c, _, n := classAt(text, i)
		if c&want == 0 {
			break
		}
		i += n
	}
	return i
}

// runOther returns the end of the longest run of [^\s\p{L}\p{N}] from i.
func runOther(text string, i int) int {
	for i < len(text) {
		c, _, n := classAt(text, i)
		if c&(clsSpace|clsLetter|clsNumber) != 0 {
			break
		}
		i += n
	}
	return i
}

// runOf returns the end of the longest run from i of bytes in set.
func runOf(text string, i int, set string) int {
	for i < len(text) && indexByte(set, text[i]) {
		i++
	}
	return i
}

func indexByte(set string, b byte) bool {
	for i := 0; i < len(set); i++ {
		if set[i] == b {
			return true
		}
	}
	return false
}

// contraction matches 's|'t|'re|'ve|'m|'ll|'d at i and returns its length
// (0 if none). foldCase makes the letters ASCII case-insensitive, which is
// what regexp2's (?i) does for these letters.
func contraction(text string, i int, foldCase bool) int {
	if i+1 >= len(text) || text[i] != '\'' {
		return 0
	}
	lower := func(b byte) byte {
		if foldCase && 'A' <= b && b <= 'Z' {
			return b + ('a' - 'A')
		}
		return b
	}
	switch lower(text[i+1]) {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if i+2 < len(text) && lower(text[i+2]) == 'e' {
			return 3
		}
	case 'l':
		if i+2 < len(text) && lower(text[i+2]) == 'l' {
			return 3
		}
	}
	return 0
}

// spaceTail implements `\s+(?!\S)|\s+` at i, where text[i] is whitespace:
// a whitespace run followed by a non-space gives its last character to the
// next piece, unless the run is a single character.
func spaceTail(text string, i int) int {
	end := runWhile(text, i, clsSpace)
	if end == len(text) {
		return end
	}
	_, last := utf8.DecodeLastRuneInString(text[i:end])
	if end-last > i {
		return end - last
	}
	return end
}

// newlineRun implements `\s*[\r\n]+` at i: the whitespace run from i up to
// and including its last \r or \n, or 0 if the run has none.
func newlineRun(text string, i int) int {
	end := runWhile(text, i, clsSpace)
	for j := end - 1; j >= i; j-- {
		if text[j] == '\r' || text[j] == '\n' {
			return j + 1
		}
	}
	return 0
}

func scanAll(text string, next func(text string, i int) int, emit func(string)) {
	for i := 0; i < len(text); {
		end := next(text, i)
		emit(text[i:end])
		i = end
	}
}

// gpt2Scanner runs patternGPT2 (GPT-2, r50k_base, p50k_base).
type gpt2Scanner struct{}

func (gpt2Scanner) split(text string, emit func(string)) { scanAll(text, gpt2Next, emit) }

func gpt2Next(text string, i int) int {
	if n := contraction(text, i, false); n > 0 {
		return i + n
	}
	c, _, _ := classAt(text, i)
	start := i
	if text[i] == ' ' {
		if next, _, n := classAt(text, i+1); n > 0 && next&clsSpace == 0 {
			c, start = next, i+1
		}
	}
	switch {
	case c&clsLetter != 0:
		return runWhile(text, start, clsLetter)
	case c&clsNumber != 0:
		return runWhile(text, start, clsNumber)
	case c&clsSpace == 0:
		return runOther(text, start)
	}
	return spaceTail(text, i)
}

// cl100kScanner runs patternCL100K (maxDigits 3) or patternQwen2 (maxDigits 1).
type cl100kScanner struct{ maxDigits int }

func (s cl100kScanner) split(text string, emit func(string)) {
	scanAll(text, func(text string, i int) int { return cl100kNext(text, i, s.maxDigits, "\r\n") }, emit)
}

func isCRLF(r rune) bool { return r == '\r' || r == '\n' }

func cl100kNext(text string, i, maxDigits int, otherTail string) int {
	if n := contraction(text, i, true); n > 0 {
		return i + n
	}
	c, r, n := classAt(text, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c&clsLetter != 0 {
		return runWhile(text, i, clsLetter)
	}
	if c&clsNumber == 0 && !isCRLF(r) {
		if next, _, _ := classAt(text, i+n); next&clsLetter != 0 {
			return runWhile(text, i+n, clsLetter)
		}
	}
	return numberOtherSpaceNext(text, i, maxDigits, otherTail)
}

// numberOtherSpaceNext runs the alternatives that cl100k and o200k share
// after their letter alternatives have failed at i:
// `\p{N}{1,maxDigits}| ?[^\s\p{L}\p{N}]+[otherTail]*|\s*[\r\n]+|\s+(?!\S)|\s+`.
func numberOtherSpaceNext(text string, i, maxDigits int, otherTail string) int {
	c, r, n := classAt(text, i)
	if c&clsNumber != 0 {
		end := i + n
		for d := 1; d < maxDigits; d++ {
			c2, _, n2 := classAt(text, end)
			if c2&clsNumber == 0 {
				break
			}
			end += n2
		}
		return end
	}
	if c&(clsSpace|clsLetter) == 0 {
		return runOf(text, runOther(text, i), otherTail)
	}
	if r == ' ' {
		if next, _, n2 := classAt(text, i+1); n2 > 0 && next&(clsSpace|clsLetter|clsNumber) == 0 {
			return runOf(text, runOther(text, i+1), otherTail)
		}
	}
	if end := newlineRun(text, i); end > 0 {
		return end
	}
	return spaceTail(text, i)
}

// o200kScanner runs patternO200K (o200k_base).
type o200kScanner struct{}

func (o200kScanner) split(text string, emit func(string)) { scanAll(text, o200kNext, emit) }

func o200kNext(text string, i int) int {
	c, r, n := classAt(text, i)
	// The optional [^\r\n\p{L}\p{N}] prefix is tried first, then skipped.
	starts := [2]int{-1, i}
	if c&(clsLetter|clsNumber) == 0 && !isCRLF(r) {
		starts[0] = i + n
	}
	// [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+ backtracks the
	// upper run until a lower-class rune can start the second run.
	for _, s := range starts {
		if s < 0 {
			continue
		}
		upperEnd := runWhile(text, s, clsUpperish)
		for k := upperEnd; ; {
			if cls, _, _ := classAt(text, k); cls&clsLowerish != 0 {
				end := runWhile(text, k, clsLowerish)
				return end + contraction(text, end, true)
			}
			if k == s {
				break
			}
			_, w := utf8.DecodeLastRuneInString(text[s:k])
			k -= w
		}
	}
	// [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
	for _, s := range starts {
		if s < 0 {
			continue
		}
		if upperEnd := runWhile(text, s, clsUpperish); upperEnd > s {
			end := runWhile(text, upperEnd, clsLowerish)
			return end + contraction(text, end, true)
		}
	}
	return numberOtherSpaceNext(text, i, 3, "\r\n/")
}

// regexSplitter is HF's Split pre-tokenizer with an arbitrary pattern, run
// by regexp2 because the patterns in the wild use lookahead.
type regexSplitter struct {
	re       *regexp2.Regexp
	behavior splitBehavior
	invert   bool
}

func (s regexSplitter) split(text string, emit func(string)) {
	splitByMatches(text, s.matches(text), s.behavior, s.invert, emit)
}

func (s regexSplitter) matches(text string) [][2]int {
	runes := []rune(text)
	offsets := make([]int, len(runes)+1)
	at := 0
	for i, r := range runes {
		offsets[i] = at
		at += utf8.RuneLen(r)
	}
	offsets[len(runes)] = at
	var out [][2]int
	// Errors from regexp2 are match timeouts, which are disabled.
	m, _ := s.re.FindRunesMatch(runes)
	for m != nil {
		out = append(out, [2]int{offsets[m.Index], offsets[m.Index+m.Length]})
		m, _ = s.re.FindNextMatch(m)
	}
	return out
}

// splitBehavior is HF's SplitDelimiterBehavior.
type splitBehavior int

const (
	behaviorIsolated splitBehavior = iota
	behaviorRemoved
	behaviorMergedWithPrevious
	behaviorMergedWithNext
	behaviorContiguous
)

func parseBehavior(s string) (splitBehavior, error) {
	switch s {
	case "Isolated", "isolated", "":
		return behaviorIsolated, nil
	case "Removed", "removed":
		return behaviorRemoved, nil
	case "MergedWithPrevious", "merged_with_previous":
		return behaviorMergedWithPrevious, nil
	case "MergedWithNext", "merged_with_next":
		return behaviorMergedWithNext, nil
	case "Contiguous", "contiguous":
		return behaviorContiguous, nil
	}
	return 0, fmt.Errorf("split behavior %q is not one of Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous", s)
}

// splitByMatches reproduces tokenizers' NormalizedString::split: the text
// is cut into alternating match / non-match segments, which behavior then
// keeps, drops or glues to a neighbour.
func splitByMatches(text string, matches [][2]int, behavior splitBehavior, invert bool, emit func(string)) {
	type segment struct {
		start, end int
		match      bool
	}
	segments := make([]segment, 0, 2*len(matches)+1)
	prev := 0
	for _, m := range matches {
		if m[0] < prev || m[1] < m[0] {
			continue // only a right-to-left pattern could go backwards
		}
		if m[0] > prev {
			segments = append(segments, segment{prev, m[0], invert})
		}
		segments = append(segments, segment{m[0], m[1], !invert})
		prev = m[1]
	}
	if prev < len(text) {
		segments = append(segments, segment{prev, len(text), invert})
	}

	type piece struct{ start, end int }
	var pieces []piece
	switch behavior {
	case behaviorIsolated:
		for _, s := range segments {
			pieces = append(pieces, piece{s.start, s.end})
		}
	case behaviorRemoved:
		for _, s := range segments {
			if !s.match {
				pieces = append(pieces, piece{s.start, s.end})
			}
		}
	case behaviorContiguous:
		previousMatch := false
		for _, s := range segments {
			if s.match == previousMatch && len(pieces) > 0 {
				pieces[len(pieces)-1].end = s.end
			} else {
				pieces = append(pieces, piece{s.start, s.end})
			}
			previousMatch = s.match
		}
	case behaviorMergedWithPrevious:
		previousMatch := false
		for _, s := range segments {
			if s.match && !previousMatch && len(pieces) > 0 {
				pieces[len(pieces)-1].end = s.end
			} else {
				pieces = append(pieces, piece{s.start, s.end})
			}
			previousMatch = s.match
		}
	case behaviorMergedWithNext:
		previousMatch := false
		for k := len(segments) - 1; k >= 0; k-- {
			s := segments[k]
			if s.match && !previousMatch && len(pieces) > 0 {
				pieces[len(pieces)-1].start = s.start
			} else {
				pieces = append(pieces, piece{s.start, s.end})
			}
			previousMatch = s.match
		}
		for a, b := 0, len(pieces)-1; a < b; a, b = a+1, b-1 {
			pieces[a], pieces[b] = pieces[b], pieces[a]
		}
	}
	for _, p := range pieces {
		if p.end > p.start {
			emit(text[p.start:p.end])
		}
	}
}

// digitsSplitter is HF's Digits pre-tokenizer.
type digitsSplitter struct{ individual bool }

func (d digitsSplitter) split(text string, emit func(string)) {
	var matches [][2]int
	for i, r := range text {
		if unicode.IsNumber(r) {
			matches = append(matches, [2]int{i, i + utf8.RuneLen(r)})
		}
	}
	behavior := behaviorContiguous
	if d.individual {
		behavior = behaviorIsolated
	}
	splitByMatches(text, matches, behavior, false, emit)
}

// byteLevelSplitter is HF's ByteLevel pre-tokenizer. Mapping bytes to the
// printable alphabet is implicit: the BPE core works on raw bytes.
type byteLevelSplitter struct {
	addPrefixSpace bool
	useRegex       bool
}

func (b byteLevelSplitter) split(text string, emit func(string)) {
	if b.addPrefixSpace && text != "" && text[0] != ' ' {
		text = " " + text
	}
	if !b.useRegex {
		if text != "" {
			emit(text)
		}
		return
	}
	gpt2Scanner{}.split(text, emit)
}

// sequenceSplitter runs each stage on every piece of the previous stage.
type sequenceSplitter []pretokenizer

func (s sequenceSplitter) split(text string, emit func(string)) { s.splitFrom(0, text, emit) }

func (s sequenceSplitter) splitFrom(stage int, text string, emit func(string)) {
	if stage == len(s) {
		emit(text)
		return
	}
	s[stage].split(text, func(piece string) { s.splitFrom(stage+1, piece, emit) })
}

// wholeText is the pre-tokenizer of a tokenizer.json without one.
type wholeText struct{}

func (wholeText) split(text string, emit func(string)) {
	if text != "" {
		emit(text)
	}
}

// preservesText reports whether every byte of the text reaches some piece:
// only a Split step with the Removed behaviour drops text.
func preservesText(p pretokenizer) bool {
	switch p := p.(type) {
	case regexSplitter:
		return p.behavior != behaviorRemoved
	case sequenceSplitter:
		for _, stage := range p {
			if !preservesText(stage) {
				return false
			}
		}
	}
	return true
}
