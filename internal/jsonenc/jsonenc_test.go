package jsonenc

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendString(t *testing.T) {
	tests := map[string]string{
		"plain":         `"plain"`,
		`q"b\`:          `"q\"b\\"`,
		"a\nb\tc\r":     `"a\nb\tc\r"`,
		"\x01":          `"\u0001"`,
		"héllo ✓":       `"héllo ✓"`,
		"bad\xffutf8":   `"bad\ufffdutf8"`,
		"line\u2028sep": `"line\u2028sep"`,
		"<a&b>":         `"<a&b>"`,
	}
	for in, want := range tests {
		if got := string(AppendString(nil, in)); got != want {
			t.Errorf("AppendString(%q) = %s, want %s", in, got, want)
		}
	}
}

// FuzzAppendString: the output is always valid JSON that decodes back
// to the input (with invalid UTF-8 replaced, as encoding/json does).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\", "\x00\x1f", "\xff\xfe", "é✓", "\u2029"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("invalid JSON %q for %q: %v", out, s, err)
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		if !utf8.ValidString(s) {
			// Each invalid byte becomes one U+FFFD here; ToValidUTF8 merges runs.
			if !utf8.ValidString(back) {
				t.Fatalf("decoded string is not valid UTF-8")
			}
			return
		}
		if back != want {
			t.Fatalf("round trip %q → %q", s, back)
		}
	})
}
