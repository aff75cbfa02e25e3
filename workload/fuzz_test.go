package workload

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func FuzzReadShareGPT(f *testing.F) {
	if data, err := os.ReadFile(shareGPTFile); err == nil {
		f.Add(data)
	}
	for _, seed := range []string{
		``, `[]`, `[null]`, `{}`, `[{"conversations": [{"value": "a"}, {"value": "b"}]}]`,
		`[{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "q"}]}, {"role": "assistant", "content": null}]}]`,
		`[{"conversations": [{"value": 1}]}]`, `[1, "x", true]`, `[{"conversations": [`, `[] x`, "\xef\xbb\xbf[]",
		`[{"conversations": [{"value": "\ud800"}, {"value": "ok"}]}]`,
	} {
		f.Add([]byte(seed))
	}
	const name = "fuzz.json"
	f.Fuzz(func(t *testing.T, data []byte) {
		convs, entries, err := readShareGPT(bytes.NewReader(data), name)
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, `"`+name+`"`) || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line naming the file", msg)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		if len(convs) > entries {
			t.Fatalf("%d conversations from %d entries", len(convs), entries)
		}
	})
}

var lineRef = regexp.MustCompile(`" line (\d+): `)

func FuzzReadCustom(f *testing.F) {
	if data, err := os.ReadFile("testdata/custom_small.jsonl"); err == nil {
		f.Add(data)
	}
	for _, seed := range []string{
		``, "\n\n", `{"prompt": "a"}`, "{\"prompt\": \"a\", \"output_tokens\": 3}\r\n{\"prompt\": \"b\", \"max_tokens\": 1e3}",
		`{"prompt": ""}`, `{"prompt": 5}`, `[1]`, `{"prompt": "a", "max_tokens": 1e99}`, `{"prompt": "a"`, "\xef\xbb\xbf{\"prompt\": \"bom\"}",
		"{\"prompt\": \"a\"}\n{}", `{"prompt": "x", "output_tokens": -0}`,
	} {
		f.Add([]byte(seed))
	}
	const name = "fuzz.jsonl"
	f.Fuzz(func(t *testing.T, data []byte) {
		prompts, err := readCustom(bytes.NewReader(data), name)
		lines := bytes.Count(data, []byte("\n")) + 1
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, `"`+name+`"`) || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line naming the file", msg)
			}
			if m := lineRef.FindStringSubmatch(msg); m != nil {
				if n, _ := strconv.Atoi(m[1]); n < 1 || n > lines {
					t.Fatalf("error %q names line %d of %d", msg, n, lines)
				}
			} else if !strings.Contains(msg, "no prompts") {
				t.Fatalf("error %q names no line", msg)
			}
			return
		}
		nonBlank := 0
		for i, line := range bytes.Split(data, []byte("\n")) {
			if i == 0 {
				line = bytes.TrimPrefix(line, []byte("\ufeff"))
			}
			if len(bytes.TrimSpace(line)) > 0 {
				nonBlank++
			}
		}
		if len(prompts) != nonBlank {
			t.Fatalf("%d prompts from %d non-blank lines", len(prompts), nonBlank)
		}
		for _, p := range prompts {
			if p.prompt == "" || p.outputLen < 0 || p.outputLen > maxLineOutputTokens {
				t.Fatalf("accepted %+v", p)
			}
		}
	})
}
