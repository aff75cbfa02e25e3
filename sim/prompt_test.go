package sim

import (
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/internal/fixture"
)

func TestDerivePromptIDs(t *testing.T) {
	tests := []struct {
		name   string
		text   string
		n      int
		pieces int // IDs when n <= 0
	}{
		{"words with leading spaces", "Shall I compare thee", 0, 5}, // "Shall" " I" " comp" "are" " thee"
		{"long word split every 5 bytes", "incomprehensibilities", 0, 5},
		{"punctuation alone", "a, b.", 0, 4}, // "a" "," " b" "."
		{"whitespace runs", "a\n\n\nb", 0, 3},
		{"empty", "", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DerivePromptIDs(tt.text, tt.n)
			if len(got) != tt.pieces {
				t.Fatalf("%d IDs for %q, want %d", len(got), tt.text, tt.pieces)
			}
		})
	}
	a := DerivePromptIDs("the quick brown fox", 0)
	b := DerivePromptIDs("the quick brown fox", 0)
	if !slices.Equal(a, b) {
		t.Fatal("not deterministic")
	}
	if got := DerivePromptIDs("short", 50); len(got) != 50 {
		t.Fatalf("padding: %d IDs, want 50", len(got))
	}
	if got := DerivePromptIDs(strings.Repeat("word ", 100), 10); len(got) != 10 {
		t.Fatalf("truncation: %d IDs, want 10", len(got))
	}
	if slices.Equal(DerivePromptIDs("aaa", 20)[1:], DerivePromptIDs("aab", 20)[1:]) {
		t.Fatal("padding of different texts is identical")
	}
}

// On real English text the pieces land near BPE token counts (about 4
// bytes per token), so PromptLen-sized ID lists cover most of the text.
func TestDerivePromptIDsRate(t *testing.T) {
	text := fixture.Sonnet()
	ids := DerivePromptIDs(text, 0)
	rate := float64(len(text)) / float64(len(ids))
	if rate < 3 || rate > 5 {
		t.Fatalf("%.2f bytes per piece, want about 4", rate)
	}
}

// FuzzDerivePromptIDs checks the properties the prefix cache relies on:
// exact length, determinism, and that a text extended at its end keeps
// every ID of the original except possibly the last piece's.
func FuzzDerivePromptIDs(f *testing.F) {
	f.Add("Shall I compare thee to a summer's day?", " Thou art more lovely", 12)
	f.Add("", "x", 0)
	f.Add("naïve café\n\n", "résumé", 3)
	f.Add("aaaaaaaaaaaaaaaaaaaa", "aaaa", 5)
	f.Fuzz(func(t *testing.T, text, more string, n int) {
		n %= 4096
		ids := DerivePromptIDs(text, n)
		if n > 0 && len(ids) != n {
			t.Fatalf("%d IDs, want %d", len(ids), n)
		}
		if n <= 0 && len(ids) > len(text) {
			t.Fatalf("%d pieces from %d bytes", len(ids), len(text))
		}
		for _, id := range ids {
			if id < 0 {
				t.Fatalf("ID %d out of range", id)
			}
		}
		if !slices.Equal(ids, DerivePromptIDs(text, n)) {
			t.Fatal("not deterministic")
		}
		base := DerivePromptIDs(text, 0)
		longer := DerivePromptIDs(text+more, 0)
		if len(base) > 0 {
			keep := base[:len(base)-1]
			if len(longer) < len(keep) || !slices.Equal(longer[:len(keep)], keep) {
				t.Fatalf("appending %q changed the IDs of %q before its last piece", more, text)
			}
		}
	})
}
