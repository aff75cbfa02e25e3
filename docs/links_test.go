package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// link matches a Markdown link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

var heading = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)

// anchor is GitHub's id for a heading: lower case, letters, digits,
// spaces, dashes and underscores kept, spaces as dashes.
func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(stripFences(text), -1) {
		a := anchor(m[1])
		for n := 1; out[a]; n++ {
			a = anchor(m[1]) + "-" + string(rune('0'+n))
		}
		out[a] = true
	}
	return out
}

// stripFences drops fenced code, whose lines are neither headings nor links.
func stripFences(text string) string {
	var b strings.Builder
	in := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(line, "```") {
			in = !in
			continue
		}
		if !in {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TestLinks requires every relative link of the README and the pages to
// reach a file of the repository (and a heading, when it names one), and
// the README to link every page.
func TestLinks(t *testing.T) {
	paths := append([]string{filepath.Join("..", "README.md")}, mustGlob(t, "*.md")...)
	texts := map[string]string{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		texts[filepath.Clean(p)] = string(raw)
	}
	linkedFromReadme := map[string]bool{}
	for _, p := range paths {
		text := stripFences(texts[filepath.Clean(p)])
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			dest := filepath.Clean(p)
			if file != "" {
				dest = filepath.Clean(filepath.Join(filepath.Dir(p), file))
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: link %s: no such file in the repository", pageName(p), target)
				continue
			}
			if p == filepath.Join("..", "README.md") {
				linkedFromReadme[filepath.Base(dest)] = filepath.Dir(dest) == filepath.Join("..", "docs")
			}
			if frag == "" {
				continue
			}
			destText, ok := texts[dest]
			if !ok {
				continue
			}
			if !anchors(destText)[frag] {
				t.Errorf("%s: link %s: %s has no heading with that anchor", pageName(p), target, pageName(dest))
			}
		}
	}
	for _, p := range paths[1:] {
		if !linkedFromReadme[filepath.Base(p)] {
			t.Errorf("README.md does not link %s", pageName(p))
		}
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) == 0 {
		t.Fatalf("no %s in docs/", pattern)
	}
	return m
}
