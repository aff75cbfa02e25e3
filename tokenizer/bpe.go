package tokenizer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrUnknownTokenID is wrapped by Decode errors for IDs outside the vocabulary.
var ErrUnknownTokenID = errors.New("unknown token ID")

// ctxCheckEvery is how many pieces Encode handles between context checks.
const ctxCheckEvery = 1024

// bpeModel is byte-level BPE, shared by the built-in tiktoken encodings and
// HF tokenizer.json files. It works on raw bytes: HF's printable byte
// alphabet is translated away when the file is loaded.
type bpeModel struct {
	name string

	// normalize is applied to text between added tokens; nil means none.
	normalize func(string) string
	pre       pretokenizer
	added     *addedMatcher

	// pieceIDs maps the bytes of every ordinary token to its ID.
	pieceIDs map[string]int32
	// byteIDs[b] is the symbol a lone byte starts as, or -1.
	byteIDs [256]int32
	// pairs maps left<<32|right to rank<<32|merged for HF merges. When nil,
	// merges are tiktoken's: two adjacent parts merge if their concatenated
	// bytes are a token, and the rank is that token's ID.
	pairs map[uint64]uint64
	// twoByteIDs[a<<8|b] is the token for the two bytes a b, or -1: in
	// tiktoken mode every merge starts from byte pairs, and a flat table
	// answers those without hashing.
	twoByteIDs []int32
	// wholePieceFirst emits a piece that is itself a token without merging
	// (tiktoken always; HF with ignore_merges).
	wholePieceFirst bool
	unkID           int32
	fuseUnk         bool

	// tokenBytes[id] is what id decodes to, if assigned[id].
	tokenBytes []string
	assigned   []bool
	vocabSize  int
	specialIDs []int

	// maxTokenBytes is the longest token's byte length (ordinary and added
	// tokens). With pieceBound, every byte of a piece ends up in a token
	// of at most that length, so a piece of n bytes needs at least
	// n/maxTokenBytes tokens; it fails when bytes can be dropped or fused
	// into one unknown token. textBound extends that to the raw text: no
	// normalizer, no pre-tokenizer step and no stripping added token can
	// remove bytes before BPE sees them.
	maxTokenBytes         int
	pieceBound, textBound bool
}

// finish derives vocabSize and specialIDs: every unassigned ID below
// vocabSize counts as special, so a random prompt drawn from
// [0, VocabSize) minus SpecialIDs always decodes.
func (m *bpeModel) finish(special map[int]bool) {
	m.vocabSize = len(m.tokenBytes)
	m.maxTokenBytes = 1
	for id, b := range m.tokenBytes {
		if m.assigned[id] {
			m.maxTokenBytes = max(m.maxTokenBytes, len(b))
		}
	}
	m.pieceBound = !slices.Contains(m.byteIDs[:], -1)
	m.textBound = m.pieceBound && m.normalize == nil && preservesText(m.pre) && !m.added.strips()
	m.specialIDs = m.specialIDs[:0]
	for id := range m.vocabSize {
		if special[id] || !m.assigned[id] {
			m.specialIDs = append(m.specialIDs, id)
		}
	}
}

func (m *bpeModel) Name() string      { return m.name }
func (m *bpeModel) VocabSize() int    { return m.vocabSize }
func (m *bpeModel) SpecialIDs() []int { return slices.Clone(m.specialIDs) }

// Encode splits out added (special) tokens first, as HF tokenizers and
// vLLM's /tokenize do even with add_special_tokens=false, then normalizes,
// pre-tokenizes and BPE-encodes the text between them. Invalid UTF-8 is
// first replaced the way Python decodes bytes with errors="replace".
func (m *bpeModel) Encode(ctx context.Context, text string) ([]int, error) {
	return m.encodeLimit(ctx, text, -1)
}

// maxPieceBytes caps the BPE work on one pre-tokenized piece: a longer
// piece (a megabyte of one letter, a run of spaces) is encoded in chunks of
// at most this many bytes, cut at rune boundaries. Merges never cross a
// cut, so such a piece may come out a token or so per chunk longer than
// tiktoken or HF would make it; in exchange the merge heap and symbol list
// stay within 4,096 entries and encoding stays linear in the text. Real
// text has no piece near this length.
const maxPieceBytes = 4096

// encodeLimit is Encode that gives up with a *LimitError as soon as the
// text is known to need more than limit tokens; limit < 0 means no limit.
func (m *bpeModel) encodeLimit(ctx context.Context, text string, limit int) ([]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("tokenizer %s: encode: %w", m.name, err)
	}
	// Each token covers at most maxTokenBytes bytes of the text, so a text
	// this long cannot fit: refuse it before paying for any of it.
	if limit >= 0 && m.textBound {
		if atLeast := ceilDiv(len(text), m.maxTokenBytes); atLeast > limit {
			return nil, &LimitError{Limit: limit, AtLeast: atLeast}
		}
	}
	text = toValidUTF8(text)
	capacity := len(text)/4 + 1
	if limit >= 0 {
		capacity = min(capacity, limit+1)
	}
	ids := make([]int, 0, capacity)
	var scratch mergeScratch
	var stopErr error
	pieces := 0
	overLimit := func(atLeast int) bool {
		if limit >= 0 && atLeast > limit {
			stopErr = &LimitError{Limit: limit, AtLeast: atLeast}
			return true
		}
		return false
	}
	encodePiece := func(piece string) {
		if stopErr != nil {
			return
		}
		if m.pieceBound && overLimit(len(ids)+ceilDiv(len(piece), m.maxTokenBytes)) {
			return
		}
		for piece != "" {
			if pieces++; pieces%ctxCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					stopErr = fmt.Errorf("tokenizer %s: encode: %w", m.name, err)
					return
				}
			}
			chunk := piece
			if len(chunk) > maxPieceBytes {
				chunk = piece[:runeStartAtOrBefore(piece, maxPieceBytes)]
			}
			piece = piece[len(chunk):]
			ids = m.appendPiece(ids, chunk, &scratch)
			if overLimit(len(ids)) {
				return
			}
		}
	}
	encodeText := func(segment string) {
		if stopErr != nil {
			return
		}
		if m.normalize != nil {
			segment = m.normalize(segment)
		}
		m.pre.split(segment, encodePiece)
	}
	if m.added == nil {
		encodeText(text)
	} else {
		m.added.split(text, encodeText, func(id int) {
			if stopErr == nil {
				ids = append(ids, id)
				overLimit(len(ids))
			}
		})
	}
	if stopErr != nil {
		return nil, stopErr
	}
	return ids, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// runeStartAtOrBefore returns the largest i ≤ n (n < len(s)) at which a
// rune starts, or n when none does within utf8.UTFMax bytes (invalid text).
func runeStartAtOrBefore(s string, n int) int {
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return i
		}
	}
	return n
}

// Decode concatenates the tokens' bytes and replaces invalid UTF-8 the way
// Python's bytes.decode(errors="replace") and HF's decoders do.
func (m *bpeModel) Decode(ctx context.Context, ids []int) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("tokenizer %s: decode: %w", m.name, err)
	}
	var b strings.Builder
	b.Grow(4 * len(ids))
	for _, id := range ids {
		if id < 0 || id >= len(m.tokenBytes) || !m.assigned[id] {
			return "", fmt.Errorf("tokenizer %s: decode: %w %d (IDs run 0..%d, minus unassigned ones)",
				m.name, ErrUnknownTokenID, id, m.vocabSize-1)
		}
		b.WriteString(m.tokenBytes[id])
	}
	return toValidUTF8(b.String()), nil
}

type symbol struct {
	id         int32
	start, end int32 // byte range within the piece
	prev, next int32 // neighbour indices, -1 at the ends
	dead       bool
}

type mergeCandidate struct {
	rank, pos, merged int32
	end               int32 // the right symbol's end when queued
}

// mergeScratch is reused across the pieces of one Encode call.
type mergeScratch struct {
	symbols []symbol
	heap    []mergeCandidate
}

func (m *bpeModel) lookup(piece string, left, right *symbol) (rank, merged int32, ok bool) {
	if m.pairs == nil {
		if right.end-left.start == 2 {
			id := m.twoByteIDs[int(piece[left.start])<<8|int(piece[left.start+1])]
			return id, id, id >= 0
		}
		id, ok := m.pieceIDs[piece[left.start:right.end]]
		return id, id, ok
	}
	v, ok := m.pairs[uint64(uint32(left.id))<<32|uint64(uint32(right.id))]
	return int32(v >> 32), int32(uint32(v)), ok
}

// appendPiece BPE-encodes one piece. Merges are applied lowest rank first,
// leftmost first among equal ranks, which is both tiktoken's and HF's
// order; a heap keeps long pieces from going quadratic.
func (m *bpeModel) appendPiece(dst []int, piece string, sc *mergeScratch) []int {
	if m.wholePieceFirst {
		if id, ok := m.pieceIDs[piece]; ok {
			return append(dst, int(id))
		}
	}
	syms := sc.symbols[:0]
	for i := 0; i < len(piece); i++ {
		id := m.byteIDs[piece[i]]
		if id < 0 {
			if m.unkID < 0 {
				continue // HF drops what it cannot represent
			}
			if last := len(syms) - 1; m.fuseUnk && last >= 0 && syms[last].id == m.unkID {
				syms[last].end = int32(i + 1)
				continue
			}
			id = m.unkID
		}
		n := int32(len(syms))
		syms = append(syms, symbol{id: id, start: int32(i), end: int32(i + 1), prev: n - 1, next: n + 1})
	}
	sc.symbols = syms
	if len(syms) == 0 {
		return dst
	}
	syms[len(syms)-1].next = -1

	h := sc.heap[:0]
	for i := 0; i+1 < len(syms); i++ {
		if rank, merged, ok := m.lookup(piece, &syms[i], &syms[i+1]); ok {
			h = append(h, mergeCandidate{rank, int32(i), merged, syms[i+1].end})
		}
	}
	heapInit(h)
	for len(h) > 0 {
		var top mergeCandidate
		top, h = heapPop(h)
		left := &syms[top.pos]
		if left.dead || left.next < 0 {
			continue
		}
		right := &syms[left.next]
		if m.stale(piece, left, right, top) {
			continue
		}
		left.id = top.merged
		left.end = right.end
		left.next = right.next
		right.dead = true
		if left.next >= 0 {
			syms[left.next].prev = top.pos
		}
		if left.prev >= 0 {
			if rank, merged, ok := m.lookup(piece, &syms[left.prev], left); ok {
				h = heapPush(h, mergeCandidate{rank, left.prev, merged, left.end})
			}
		}
		if left.next >= 0 {
			if rank, merged, ok := m.lookup(piece, left, &syms[left.next]); ok {
				h = heapPush(h, mergeCandidate{rank, top.pos, merged, syms[left.next].end})
			}
		}
	}
	sc.heap = h
	for i := int32(0); i >= 0; i = syms[i].next {
		dst = append(dst, int(syms[i].id))
	}
	return dst
}

// stale reports whether a queued merge no longer applies because a
// neighbouring merge changed one of its two symbols. HF re-checks the pair
// itself; in tiktoken mode symbols only grow and the left one's start
// never moves, so the pair is unchanged exactly when it still ends where it
// did when queued.
func (m *bpeModel) stale(piece string, left, right *symbol, c mergeCandidate) bool {
	if m.pairs == nil {
		return right.end != c.end
	}
	_, current, ok := m.lookup(piece, left, right)
	return !ok || current != c.merged
}

func candidateLess(a, b mergeCandidate) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.pos < b.pos
}

func heapInit(h []mergeCandidate) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		heapDown(h, i)
	}
}

func heapPush(h []mergeCandidate, c mergeCandidate) []mergeCandidate {
	h = append(h, c)
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !candidateLess(h[i], h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
	return h
}

func heapPop(h []mergeCandidate) (mergeCandidate, []mergeCandidate) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	heapDown(h, 0)
	return top, h
}

func heapDown(h []mergeCandidate, i int) {
	for {
		smallest := i
		if l := 2*i + 1; l < len(h) && candidateLess(h[l], h[smallest]) {
			smallest = l
		}
		if r := 2*i + 2; r < len(h) && candidateLess(h[r], h[smallest]) {
			smallest = r
		}
		if smallest == i {
			return
		}
		h[i], h[smallest] = h[smallest], h[i]
		i = smallest
	}
}

// addedToken is a token matched in raw text before anything else runs.
type addedToken struct {
	content    string
	id         int
	lstrip     bool
	rstrip     bool
	singleWord bool
}

// addedMatcher finds added tokens leftmost-longest, as tokenizers'
// AddedVocabulary does.
type addedMatcher struct {
	// byFirstByte[b] lists the tokens starting with byte b, longest first.
	byFirstByte [256][]addedToken
}

func newAddedMatcher(tokens []addedToken) *addedMatcher {
	var m addedMatcher
	found := false
	for _, t := range tokens {
		if t.content == "" {
			continue
		}
		first := t.content[0]
		m.byFirstByte[first] = append(m.byFirstByte[first], t)
		found = true
	}
	if !found {
		return nil
	}
	for b := range m.byFirstByte {
		slices.SortStableFunc(m.byFirstByte[b], func(x, y addedToken) int { return len(y.content) - len(x.content) })
	}
	return &m
}

// split calls text for each stretch between added tokens and token for
// each added token, in order.
func (m *addedMatcher) split(s string, text func(string), token func(id int)) {
	segmentStart := 0
	for i := 0; i < len(s); i++ {
		candidates := m.byFirstByte[s[i]]
		if len(candidates) == 0 {
			continue
		}
		for _, t := range candidates {
			end := i + len(t.content)
			if !strings.HasPrefix(s[i:], t.content) {
				continue
			}
			if t.singleWord && (endsWithWordChar(s[:i]) || startsWithWordChar(s[end:])) {
				continue
			}
			start := i
			if t.lstrip {
				for start > segmentStart {
					r, n := utf8.DecodeLastRuneInString(s[segmentStart:start])
					if !unicode.IsSpace(r) {
						break
					}
					start -= n
				}
			}
			if t.rstrip {
				for end < len(s) {
					r, n := utf8.DecodeRuneInString(s[end:])
					if !unicode.IsSpace(r) {
						break
					}
					end += n
				}
			}
			if start > segmentStart {
				text(s[segmentStart:start])
			}
			token(t.id)
			segmentStart = end
			i = end - 1
			break
		}
	}
	if segmentStart < len(s) {
		text(s[segmentStart:])
	}
}

func isWordChar(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

func endsWithWordChar(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n > 0 && isWordChar(r)
}

func startsWithWordChar(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n > 0 && isWordChar(r)
}

// toValidUTF8 replaces each maximal invalid subsequence with U+FFFD, as
// Python's bytes.decode("utf-8", errors="replace") and Rust's
// String::from_utf8_lossy do (strings.ToValidUTF8 would merge runs).
func toValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || n > 1 {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		b.WriteRune(utf8.RuneError)
		i += invalidPrefixLen(s[i:])
	}
	return b.String()
}

// invalidPrefixLen returns the length of the maximal subpart of an
// ill-formed UTF-8 sequence starting at s[0] (Unicode 3.9, U+FFFD policy).
func invalidPrefixLen(s string) int {
	need, lo, hi := 0, byte(0x80), byte(0xBF)
	switch b := s[0]; {
	case 0xC2 <= b && b <= 0xDF:
		need = 1
	case b == 0xE0:
		need, lo = 2, 0xA0
	case b == 0xED:
		need, hi = 2, 0x9F
	case 0xE1 <= b && b <= 0xEF:
		need = 2
	case b == 0xF0:
		need, lo = 3, 0x90
	case 0xF1 <= b && b <= 0xF3:
		need = 3
	case b == 0xF4:
		need, hi = 3, 0x8F
	}
	n := 1
	for k := 0; k < need && n < len(s); k++ {
		c := s[n]
		if k > 0 {
			lo, hi = 0x80, 0xBF
		}
		if c < lo || c > hi {
			break
		}
		n++
	}
	return n
}

// strips reports whether some added token absorbs the whitespace around
// it, so that one token can stand for any number of text bytes.
func (m *addedMatcher) strips() bool {
	if m == nil {
		return false
	}
	for _, tokens := range m.byFirstByte {
		for _, t := range tokens {
			if t.lstrip || t.rstrip {
				return true
			}
		}
	}
	return false
}
