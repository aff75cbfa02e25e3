// Package textline turns text from servers, files and errors into one
// printable line: what error reasons, manifests and terminal messages hold.
package textline

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// OneLine collapses every run of white space and control characters into
// one space, drops invalid UTF-8 (a body cut at a byte limit may end inside
// a rune), trims the ends, and, when limit > 0 and the line is longer than
// limit bytes, cuts it at a rune boundary and appends "…".
func OneLine(s string, limit int) string {
	var b strings.Builder
	b.Grow(min(len(s), max(limit, 0)+len("…")))
	space := false
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		if r == utf8.RuneError && size == 1 {
			continue
		}
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = b.Len() > 0
			continue
		}
		sep := 0
		if space {
			sep = 1
		}
		if limit > 0 && b.Len()+sep+utf8.RuneLen(r) > limit {
			b.WriteString("…")
			break
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}
