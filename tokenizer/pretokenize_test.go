package tokenizer

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/servebench/servebench/internal/fixture"

	"github.com/dlclark/regexp2"
	"github.com/google/go-cmp/cmp"
)

func readSonnet(tb testing.TB) string {
	tb.Helper()
	return fixture.Sonnet()
}

// trickyRunes covers every class boundary the split patterns care about.
var trickyRunes = []string{
	"a", "Z", "q", "S", "x", "0", "7", " ", " ", " ", "\t", "\n", "\r", "\r\n", "\v", "\f",
	"'", "'s", "'S", "'ll", "'LL", "'Re", "'ve", "'d", "'m", "'t", "'x",
	"!", "?", ".", ",", "/", "//", "-", "_", "\"", "<", ">", "|", "(", ")", "...",
	"é", "ß", "Σ", "ω", "ǅ", "ʰ", "中", "あ", "\u0301", "\u0903", "٣", "Ⅻ", "½", "ª", "²",
	"\u00a0", "\u2028", "\u3000", "\u0085", "\u200b", "€", "😀", "\ufffd", "İ", "ſ", "\u212a",
	"hello", "World", "THE", "naïve", "123456", "  ", "\n\n", " \n ",
}

// randomTricky builds a seeded random string from trickyRunes.
func randomTricky(rng *rand.Rand, maxParts int) string {
	var b strings.Builder
	for range rng.IntN(maxParts + 1) {
		b.WriteString(trickyRunes[rng.IntN(len(trickyRunes))])
	}
	return b.String()
}

var compiledPatterns sync.Map // pattern → *regexp2.Regexp

func compiledPattern(pattern string) *regexp2.Regexp {
	if re, ok := compiledPatterns.Load(pattern); ok {
		return re.(*regexp2.Regexp)
	}
	re, _ := compiledPatterns.LoadOrStore(pattern, regexp2.MustCompile(pattern, regexp2.None))
	return re.(*regexp2.Regexp)
}

// regexPieces is the reference: regexp2 running the pattern itself.
func regexPieces(tb testing.TB, pattern, text string) []string {
	tb.Helper()
	re := compiledPattern(pattern)
	runes := []rune(text)
	var pieces []string
	next := 0
	m, err := re.FindRunesMatch(runes)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		if m.Index != next {
			tb.Fatalf("pattern leaves runes %d..%d of %q unmatched", next, m.Index, text)
		}
		pieces = append(pieces, string(runes[m.Index:m.Index+m.Length]))
		next = m.Index + m.Length
	}
	if err != nil {
		tb.Fatal(err)
	}
	return pieces
}

func scannerPieces(s pretokenizer, text string) []string {
	var pieces []string
	s.split(text, func(p string) { pieces = append(pieces, p) })
	return pieces
}

func checkScannersMatchRegex(t *testing.T, text string) {
	t.Helper()
	for pattern, scanner := range knownScanners {
		want := regexPieces(t, pattern, text)
		got := scannerPieces(scanner, text)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("scanner %T%+v differs from regexp2 on %q (-regexp2 +scanner):\n%s", scanner, scanner, text, diff)
		}
	}
}

func TestScannersMatchRegexp2(t *testing.T) {
	t.Parallel()
	cases := []string{
		"", "Hello world", "  leading", "trailing  ", "a\n\nb", "x \n y", "I'm", "IT'S", "we'll've",
		"don't", "'sup", "1234567", "12 345", "$100.00!", "a/b//c\n/", "tab\tsep", "\u00a0nbsp",
		"ǅemal", "ʰʰa", "e\u0301\u0301x", "\u0301start", "中文字", "ABCdef", "ABC", "abcDEF", "Ⅻ½²٣",
		"  \n\n  x", " \r\n", "😀😀 ok", "a'S", "mixed CASE'Ll words", "'", "''", "' s",
	}
	for _, text := range cases {
		checkScannersMatchRegex(t, text)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		checkScannersMatchRegex(t, randomTricky(rng, 12))
	}
}

func TestScannersMatchRegexp2OnSonnet(t *testing.T) {
	t.Parallel()
	sonnet := readSonnet(t)
	checkScannersMatchRegex(t, sonnet[:4000])
}

func FuzzScannersMatchRegexp2(f *testing.F) {
	f.Add("Hello, world! It's 2024.\n\n  Done")
	f.Add("ǅemal ʰʰa e\u0301\u0301x 中文 😀 \u00a0\u3000\r\n")
	f.Add("'LL'S'Re")
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			text = toValidUTF8(text)
		}
		checkScannersMatchRegex(t, text)
	})
}

func TestSplitBehaviors(t *testing.T) {
	t.Parallel()
	// Matches of "-" in "a-b--c": the behaviors from the tokenizers docs.
	tests := []struct {
		behavior splitBehavior
		invert   bool
		want     []string
	}{
		{behaviorIsolated, false, []string{"a", "-", "b", "-", "-", "c"}},
		{behaviorRemoved, false, []string{"a", "b", "c"}},
		{behaviorMergedWithPrevious, false, []string{"a-", "b-", "-", "c"}},
		{behaviorMergedWithNext, false, []string{"a", "-b", "-", "-c"}},
		{behaviorContiguous, false, []string{"a", "-", "b", "--", "c"}},
		{behaviorRemoved, true, []string{"-", "-", "-"}},
	}
	re := regexp2.MustCompile("-", regexp2.None)
	for _, tt := range tests {
		s := regexSplitter{re: re, behavior: tt.behavior, invert: tt.invert}
		if diff := cmp.Diff(tt.want, scannerPieces(s, "a-b--c")); diff != "" {
			t.Errorf("behavior %d invert %v (-want +got):\n%s", tt.behavior, tt.invert, diff)
		}
	}
}

func TestParseBehavior(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"} {
		if _, err := parseBehavior(name); err != nil {
			t.Errorf("parseBehavior(%q): %v", name, err)
		}
	}
	if _, err := parseBehavior("Sideways"); err == nil || !strings.Contains(err.Error(), "Sideways") {
		t.Errorf("parseBehavior(Sideways) error = %v, want one naming the value", err)
	}
}

func TestDigitsAndByteLevelSplitters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    pretokenizer
		text string
		want []string
	}{
		{"digits contiguous", digitsSplitter{}, "ab123c4", []string{"ab", "123", "c", "4"}},
		{"digits individual", digitsSplitter{individual: true}, "ab123", []string{"ab", "1", "2", "3"}},
		{"byte level prefix space", byteLevelSplitter{addPrefixSpace: true, useRegex: true}, "Hi there", []string{" Hi", " there"}},
		{"byte level no regex", byteLevelSplitter{}, "Hi there", []string{"Hi there"}},
		{"sequence", sequenceSplitter{digitsSplitter{individual: true}, byteLevelSplitter{useRegex: true}}, "ab 12", []string{"ab", " ", "1", "2"}},
		{"whole", wholeText{}, "a b", []string{"a b"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, scannerPieces(tt.s, tt.text)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}
