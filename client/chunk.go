package client

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// chunkFields is what the client needs from one OpenAI-style response
// object (a streamed chunk or a whole non-streamed response). Absent, null
// and wrongly typed values read as zero, and a duplicated key replaces the
// earlier value entirely, exactly as decoding into map[string]any would.
type chunkFields struct {
	// HasChoices is true when "choices" is a non-empty array: vLLM counts
	// such a chunk as a token chunk even when its text is empty.
	HasChoices bool
	// From choices[0].
	Text            []byte
	Delta           messageFields
	Message         messageFields
	HasFinishReason bool // finish_reason is a string

	HasUsage         bool // "usage" is an object
	PromptTokens     intField
	CompletionTokens intField
	CachedTokens     intField // usage.prompt_tokens_details.cached_tokens

	// HasError is true when "error" is present and not null; ErrorMessage is
	// error.message, or error itself when it is a string.
	HasError     bool
	ErrorMessage []byte
	// ObjectIsError and TopMessage catch the older vLLM error body
	// {"object":"error","message":...}.
	ObjectIsError bool
	TopMessage    []byte
}

// messageFields are the text fields of choices[0].delta (streaming chat) or
// choices[0].message (non-streaming chat).
type messageFields struct {
	Content          []byte
	ReasoningContent []byte
	Reasoning        []byte
}

// intField is a JSON integer literal that fits in int64; floats, strings and
// out-of-range numbers leave OK false.
type intField struct {
	Value int64
	OK    bool
}

// maxNestingDepth mirrors encoding/json, which rejects deeper input.
const maxNestingDepth = 10000

// jsonError is a malformed-JSON report. Only the failure path allocates it.
type jsonError struct {
	msg    string
	offset int
}

func (e *jsonError) Error() string {
	return e.msg + " at byte " + strconv.Itoa(e.offset)
}

// chunkParser is a validating, allocation-free JSON scanner that extracts
// chunkFields and skips everything else. It accepts exactly what
// encoding/json accepts as a top-level object (same string unescaping, same
// replacement of invalid UTF-8, same nesting limit), which the differential
// fuzz test checks. Not safe for concurrent use; reuse one per stream.
//
// Its functions take the input and an index and return the index after what
// they consumed, or bad after recording the error: keeping the position in
// a register rather than in the struct is much of its speed.
type chunkParser struct {
	depth   int
	scratch []byte // unescaped strings of the current object
	errMsg  string
	errAt   int

	// prefix is the head of the last object parsed, up to a point between
	// top-level members where only ObjectIsError had been set; a chunk that
	// starts with the same bytes resumes there.
	prefix                  []byte
	prefixObjectIsError     bool
	checkpoint              int
	checkpointObjectIsError bool
}

const bad = -1

func (p *chunkParser) fail(at int, msg string) int {
	p.errMsg, p.errAt = msg, at
	return bad
}

// parse fills f from d. The byte slices in f point into d or into the
// parser's scratch space and are valid until the next call.
func (p *chunkParser) parse(d []byte, f *chunkFields) error {
	*f = chunkFields{}
	p.depth = 0
	p.scratch = p.scratch[:0]
	if n := len(p.prefix); n > 0 && len(d) > n && string(d[:n]) == string(p.prefix) {
		// The stream's repeated head ("id", "object", "created", "model")
		// parsed exactly like this last time: resume after it.
		p.depth = 1
		f.ObjectIsError = p.prefixObjectIsError
		if i := p.topMembers(d, n, false, f); i != bad {
			if i = skipSpace(d, i); i == len(d) {
				p.savePrefix(d)
				return nil
			}
			p.fail(i, "unexpected data after the JSON object")
		}
		p.prefix = p.prefix[:0]
		return &jsonError{msg: p.errMsg, offset: p.errAt}
	}
	i := skipSpace(d, 0)
	switch {
	case i >= len(d):
		p.fail(i, "empty JSON")
	case d[i] != '{':
		p.fail(i, "JSON is not an object")
	default:
		p.checkpoint = 0
		if i = p.enter(i); i != bad {
			i = p.topMembers(d, i, true, f)
		}
		if i != bad {
			if i = skipSpace(d, i); i == len(d) {
				p.savePrefix(d)
				return nil
			}
			p.fail(i, "unexpected data after the JSON object")
		}
	}
	p.prefix = p.prefix[:0]
	return &jsonError{msg: p.errMsg, offset: p.errAt}
}

// savePrefix remembers the head of a successfully parsed object up to the
// checkpoint, for the next chunk of the same stream.
func (p *chunkParser) savePrefix(d []byte) {
	if p.checkpoint != len(p.prefix) || p.checkpoint == 0 {
		p.prefix = append(p.prefix[:0], d[:p.checkpoint]...)
	}
	p.prefixObjectIsError = p.checkpointObjectIsError
}

func skipSpace(d []byte, i int) int {
	for i < len(d) && d[i] <= ' ' && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// enter consumes the opening byte of an object or array at i.
func (p *chunkParser) enter(i int) int {
	p.depth++
	if p.depth > maxNestingDepth {
		return p.fail(i, "JSON nested too deeply")
	}
	return i + 1
}

// member reads the next member key of an object; i is just after '{' when
// first, else just after the previous value. It returns the index of the
// value, or, with done, the index after the closing brace. The key is nil
// when it cannot be one of the ASCII names the parser looks for.
func (p *chunkParser) member(d []byte, i int, first bool) (key []byte, next int, done bool) {
	i = skipSpace(d, i)
	if i >= len(d) {
		return nil, p.fail(i, "unexpected end of JSON in object"), false
	}
	c := d[i]
	if c == '}' {
		p.depth--
		return nil, i + 1, true
	}
	if !first {
		if c != ',' {
			return nil, p.fail(i, "expected ',' or '}' after object value"), false
		}
		if i = skipSpace(d, i+1); i >= len(d) {
			return nil, p.fail(i, "unexpected end of JSON in object"), false
		}
		c = d[i]
	}
	if c != '"' {
		return nil, p.fail(i, "expected string key in object"), false
	}
	// The string fast path of str, inlined: keys are the commonest token.
	var raw []byte
	plain := true
	start := i + 1
	if j := plainRun(d, start); j < len(d) && d[j] == '"' {
		raw, i = d[start:j], j+1
	} else if raw, i, plain = p.strSlow(d, start, j); i == bad {
		return nil, bad, false
	}
	if plain {
		key = raw
	} else if !hasHighByte(raw) {
		// Escapes may spell an ASCII name; a non-ASCII byte unescapes to
		// non-ASCII and cannot match, so such a key is not unescaped.
		key = p.unescape(raw)
	}
	if i < len(d) && d[i] == ':' {
		i++
	} else {
		if i = skipSpace(d, i); i >= len(d) || d[i] != ':' {
			return nil, p.fail(i, "expected ':' after object key"), false
		}
		i++
	}
	if i = skipSpace(d, i); i >= len(d) {
		return nil, p.fail(i, "unexpected end of JSON, expected a value"), false
	}
	return key, i, false
}

// element moves to the next array element; i is just after '[' when first,
// else just after the previous element. done reports the closing bracket,
// with next the index after it.
func (p *chunkParser) element(d []byte, i int, first bool) (next int, done bool) {
	i = skipSpace(d, i)
	if i >= len(d) {
		return p.fail(i, "unexpected end of JSON in array"), false
	}
	switch {
	case d[i] == ']':
		p.depth--
		return i + 1, true
	case first:
	case d[i] == ',':
		if i = skipSpace(d, i+1); i >= len(d) {
			return p.fail(i, "unexpected end of JSON in array"), false
		}
	default:
		return p.fail(i, "expected ',' or ']' after array element"), false
	}
	return i, false
}

func hasHighByte(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// topMembers reads the top-level object's members from i (just after '{'
// when first). While only members that fill no byte slice have been read,
// it moves the checkpoint to after each of them: that head is what
// consecutive chunks of a stream repeat.
func (p *chunkParser) topMembers(d []byte, i int, first bool, f *chunkFields) int {
	head := true
	for ; ; first = false {
		key, j, done := p.member(d, i, first)
		if j == bad || done {
			return j
		}
		switch string(key) {
		case "choices":
			head = false
			f.HasChoices, f.Text, f.Delta, f.Message, f.HasFinishReason = false, nil, messageFields{}, messageFields{}, false
			i = p.choices(d, j, f)
		case "usage":
			head = false
			f.HasUsage, f.PromptTokens, f.CompletionTokens, f.CachedTokens = false, intField{}, intField{}, intField{}
			if d[j] == '{' {
				f.HasUsage = true
				i = p.usage(d, j, f)
			} else {
				i = p.skipValue(d, j)
			}
		case "error":
			head = false
			f.HasError, f.ErrorMessage = false, nil
			i = p.errorValue(d, j, f)
		case "object":
			var s []byte
			var isString bool
			s, isString, i = p.stringValue(d, j)
			f.ObjectIsError = isString && string(s) == "error"
		case "message":
			head = false
			f.TopMessage, _, i = p.stringValue(d, j)
		default:
			i = p.skipValue(d, j)
		}
		if i == bad {
			return bad
		}
		if head {
			p.checkpoint, p.checkpointObjectIsError = i, f.ObjectIsError
		}
	}
}

func (p *chunkParser) choices(d []byte, i int, f *chunkFields) int {
	if d[i] != '[' {
		return p.skipValue(d, i)
	}
	if i = p.enter(i); i == bad {
		return bad
	}
	for n := 0; ; n++ {
		j, done := p.element(d, i, n == 0)
		if j == bad || done {
			return j
		}
		switch {
		case n > 0:
			i = p.skipValue(d, j)
		case d[j] == '{':
			f.HasChoices = true
			i = p.firstChoice(d, j, f)
		default:
			f.HasChoices = true
			i = p.skipValue(d, j)
		}
		if i == bad {
			return bad
		}
	}
}

func (p *chunkParser) firstChoice(d []byte, i int, f *chunkFields) int {
	if i = p.enter(i); i == bad {
		return bad
	}
	for first := true; ; first = false {
		key, j, done := p.member(d, i, first)
		if j == bad || done {
			return j
		}
		switch string(key) {
		case "text":
			f.Text, _, i = p.stringValue(d, j)
		case "delta":
			f.Delta = messageFields{}
			i = p.message(d, j, &f.Delta)
		case "message":
			f.Message = messageFields{}
			i = p.message(d, j, &f.Message)
		case "finish_reason":
			_, f.HasFinishReason, i = p.stringValue(d, j)
		default:
			i = p.skipValue(d, j)
		}
		if i == bad {
			return bad
		}
	}
}

func (p *chunkParser) message(d []byte, i int, m *messageFields) int {
	if d[i] != '{' {
		return p.skipValue(d, i)
	}
	if i = p.enter(i); i == bad {
		return bad
	}
	for first := true; ; first = false {
		key, j, done := p.member(d, i, first)
		if j == bad || done {
			return j
		}
		switch string(key) {
		case "content":
			m.Content, _, i = p.stringValue(d, j)
		case "reasoning_content":
			m.ReasoningContent, _, i = p.stringValue(d, j)
		case "reasoning":
			m.Reasoning, _, i = p.stringValue(d, j)
		default:
			i = p.skipValue(d, j)
		}
		if i == bad {
			return bad
		}
	}
}

func (p *chunkParser) usage(d []byte, i int, f *chunkFields) int {
	if i = p.enter(i); i == bad {
		return bad
	}
	for first := true; ; first = false {
		key, j, done := p.member(d, i, first)
		if j == bad || done {
			return j
		}
		switch string(key) {
		case "prompt_tokens":
			f.PromptTokens, i = p.intValue(d, j)
		case "completion_tokens":
			f.CompletionTokens, i = p.intValue(d, j)
		case "prompt_tokens_details":
			f.CachedTokens = intField{}
			if d[j] == '{' {
				i = p.promptDetails(d, j, f)
			} else {
				i = p.skipValue(d, j)
			}
		default:
			i = p.skipValue(d, j)
		}
		if i == bad {
			return bad
		}
	}
}

func (p *chunkParser) promptDetails(d []byte, i int, f *chunkFields) int {
	if i = p.enter(i); i == bad {
		return bad
	}
	for first := true; ; first = false {
		key, j, done := p.member(d, i, first)
		if j == bad || done {
			return j
		}
		if string(key) == "cached_tokens" {
			f.CachedTokens, i = p.intValue(d, j)
		} else {
			i = p.skipValue(d, j)
		}
		if i == bad {
			return bad
		}
	}
}

func (p *chunkParser) errorValue(d []byte, i int, f *chunkFields) int {
	switch d[i] {
	case 'n':
		return p.skipValue(d, i)
	case '"':
		f.HasError = true
		f.ErrorMessage, _, i = p.stringValue(d, i)
		return i
	case '{':
	default:
		f.HasError = true
		return p.skipValue(d, i)
	}
	f.HasError = true
	if i = p.enter(i); i == bad {
		return bad
	}
	for first := true; ; first = false {
		key, j, done := p.member(d, i, first)
		if j == bad || done {
			return j
		}
		if string(key) == "message" {
			f.ErrorMessage, _, i = p.stringValue(d, j)
		} else {
			i = p.skipValue(d, j)
		}
		if i == bad {
			return bad
		}
	}
}

// stringValue reads a value that should be a string. Any other valid value
// is skipped and reported as (nil, false).
func (p *chunkParser) stringValue(d []byte, i int) (s []byte, isString bool, next int) {
	if d[i] != '"' {
		return nil, false, p.skipValue(d, i)
	}
	raw, next, plain := p.str(d, i)
	if next == bad || plain {
		return raw, next != bad, next
	}
	return p.unescape(raw), true, next
}

// intValue reads a value that should be an integer.
func (p *chunkParser) intValue(d []byte, i int) (intField, int) {
	if c := d[i]; c != '-' && (c < '0' || c > '9') {
		return intField{}, p.skipValue(d, i)
	}
	next, integral := p.number(d, i)
	if next == bad || !integral {
		return intField{}, next
	}
	v, ok := parseInt64(d[i:next])
	return intField{Value: v, OK: ok}, next
}

// parseInt64 parses a validated JSON integer literal, reporting overflow as
// !ok (strconv.ParseInt would need a string, which allocates).
func parseInt64(b []byte) (int64, bool) {
	neg := false
	if b[0] == '-' {
		neg = true
		b = b[1:]
	}
	const cutoff = uint64(1 << 63)
	var u uint64
	for _, c := range b {
		if u > cutoff/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
		if u > cutoff {
			return 0, false
		}
	}
	if neg {
		return -int64(u), true // -(1<<63) wraps to itself, which is correct
	}
	if u == cutoff {
		return 0, false
	}
	return int64(u), true
}

func (p *chunkParser) skipValue(d []byte, i int) int {
	if i >= len(d) {
		return p.fail(i, "unexpected end of JSON, expected a value")
	}
	switch c := d[i]; c {
	case '"':
		start := i + 1
		if j := plainRun(d, start); j < len(d) && d[j] == '"' {
			return j + 1
		} else {
			_, next, _ := p.strSlow(d, start, j)
			return next
		}
	case '{':
		return p.skipObject(d, i)
	case '[':
		return p.skipArray(d, i)
	case 't':
		return p.literal(d, i, "true")
	case 'f':
		return p.literal(d, i, "false")
	case 'n':
		return p.literal(d, i, "null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			next, _ := p.number(d, i)
			return next
		}
		return p.fail(i, "invalid character "+strconv.QuoteRune(rune(c))+" looking for a value")
	}
}

func (p *chunkParser) literal(d []byte, i int, word string) int {
	if len(d)-i < len(word) || string(d[i:i+len(word)]) != word {
		return p.fail(i, "invalid literal, expected "+word)
	}
	return i + len(word)
}

func (p *chunkParser) skipObject(d []byte, i int) int {
	if i = p.enter(i); i == bad {
		return bad
	}
	for first := true; ; first = false {
		_, j, done := p.member(d, i, first)
		if j == bad || done {
			return j
		}
		if i = p.skipValue(d, j); i == bad {
			return bad
		}
	}
}

func (p *chunkParser) skipArray(d []byte, i int) int {
	if i = p.enter(i); i == bad {
		return bad
	}
	for first := true; ; first = false {
		j, done := p.element(d, i, first)
		if j == bad || done {
			return j
		}
		if i = p.skipValue(d, j); i == bad {
			return bad
		}
	}
}

// number validates the JSON number at i and reports whether it is an
// integer literal (no fraction, no exponent).
func (p *chunkParser) number(d []byte, i int) (next int, integral bool) {
	if d[i] == '-' {
		i++
	}
	switch {
	case i >= len(d):
		return p.fail(i, "unexpected end of JSON in number"), false
	case d[i] == '0':
		i++
	case d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return p.fail(i, "invalid character in number"), false
	}
	integral = true
	if i < len(d) && d[i] == '.' {
		integral = false
		i++
		start := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == start {
			return p.fail(i, "expected digit after decimal point"), false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		integral = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		start := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == start {
			return p.fail(i, "expected digit in exponent"), false
		}
	}
	return i, integral
}

// stringSafe marks bytes that need no attention inside a JSON string:
// printable ASCII other than '"' and '\\'.
var stringSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const (
	swarOnes = 0x0101010101010101
	swarHigh = 0x8080808080808080
)

// attention flags (in the byte's high bit) every byte of x that is '"',
// '\\', a control character or non-ASCII. Borrows can only flag bytes above
// a truly flagged one, so the lowest flag is exact.
func attention(x uint64) uint64 {
	quote := x ^ (swarOnes * '"')
	backslash := x ^ (swarOnes * '\\')
	return ((quote - swarOnes) | (backslash - swarOnes) | (x - swarOnes*0x20) | x) & swarHigh
}

// plainRun returns the index of the first byte at or after i that is not
// printable ASCII other than '"' and '\\', or len(d).
func plainRun(d []byte, i int) int {
	for ; i+8 <= len(d); i += 8 {
		if m := attention(binary.LittleEndian.Uint64(d[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(d) && stringSafe[d[i]] {
		i++
	}
	return i
}

// str validates the string whose opening quote is at i and returns its raw
// content and the index after the closing quote. plain reports that the
// content is already what encoding/json would produce (no escapes, valid
// UTF-8).
func (p *chunkParser) str(d []byte, i int) (raw []byte, next int, plain bool) {
	start := i + 1
	j := plainRun(d, start)
	if j < len(d) && d[j] == '"' {
		return d[start:j], j + 1, true
	}
	return p.strSlow(d, start, j)
}

// strSlow continues str from j, the first byte that needs attention.
func (p *chunkParser) strSlow(d []byte, start, j int) (raw []byte, next int, plain bool) {
	plain = true
	for i := j; ; {
		i = plainRun(d, i)
		if i >= len(d) {
			return nil, p.fail(i, "unexpected end of JSON in string"), false
		}
		switch c := d[i]; {
		case c == '"':
			return d[start:i], i + 1, plain
		case c == '\\':
			plain = false
			i++
			if i >= len(d) {
				return nil, p.fail(i, "unexpected end of JSON in string escape"), false
			}
			switch d[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for range 4 {
					if i >= len(d) || unhex(d[i]) < 0 {
						return nil, p.fail(i, "invalid \\u escape in string"), false
					}
					i++
				}
			default:
				return nil, p.fail(i, "invalid escape in string"), false
			}
		case c < 0x20:
			return nil, p.fail(i, "control character in string"), false
		default: // non-ASCII: encoding/json replaces invalid UTF-8
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				plain = false
			}
			i += size
		}
	}
}

func unhex(c byte) rune {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0')
	case c >= 'a' && c <= 'f':
		return rune(c - 'a' + 10)
	case c >= 'A' && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		h := unhex(c)
		if h < 0 {
			return -1
		}
		r = r*16 + h
	}
	return r
}

// unescape decodes the validated raw content of a string into scratch, with
// encoding/json's rules: surrogate pairs combine, lone surrogates and
// invalid UTF-8 bytes each become U+FFFD.
func (p *chunkParser) unescape(s []byte) []byte {
	start := len(p.scratch)
	b := p.scratch
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			switch s[r+1] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := getu4(s[r:])
				r += 6
				if utf16.IsSurrogate(rr) {
					rr1 := getu4(s[r:])
					if dec := utf16.DecodeRune(rr, rr1); dec != unicode.ReplacementChar {
						r += 6
						b = utf8.AppendRune(b, dec)
						continue
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // '"', '\\', '/'
				b = append(b, s[r+1])
			}
			r += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			r += size
			b = utf8.AppendRune(b, rr)
		}
	}
	p.scratch = b
	return b[start:len(b):len(b)]
}
