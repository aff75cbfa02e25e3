package textline

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestOneLine(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		limit int
		want  string
	}{
		{"plain", "connection refused", 0, "connection refused"},
		{"lines and tabs collapse", "  HTTP 500:\n\tinternal\r\n error  ", 0, "HTTP 500: internal error"},
		{"control characters", "a\x1b[31mred\x07b", 0, "a [31mred b"},
		{"invalid utf-8 dropped", "ok \xff\xfe done", 0, "ok done"},
		{"cut at the limit", "abcdefghij", 4, "abcd…"},
		{"cut on a rune boundary", "ééé", 3, "é…"},
		{"fits exactly", "abcd", 4, "abcd"},
		{"empty", " \n ", 0, ""},
	}
	for _, tt := range tests {
		if got := OneLine(tt.in, tt.limit); got != tt.want {
			t.Errorf("%s: OneLine(%q, %d) = %q, want %q", tt.name, tt.in, tt.limit, got, tt.want)
		}
	}
}

func FuzzOneLine(f *testing.F) {
	f.Add("a\nb", 3)
	f.Add("\xff\x1b é", 0)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		limit %= 1 << 12
		got := OneLine(s, limit)
		if !utf8.ValidString(got) || strings.ContainsAny(got, "\n\r\t\x1b") {
			t.Fatalf("OneLine(%q) = %q: not one valid line", s, got)
		}
		if limit > 0 && len(strings.TrimSuffix(got, "…")) > limit {
			t.Fatalf("OneLine(%q, %d) = %q: longer than the limit", s, limit, got)
		}
	})
}
