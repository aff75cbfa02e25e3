//go:build unix

package docs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCommandFlags keeps the commands the pages only show (against a real
// server, a file the repository lacks, a cluster) from naming a flag
// servebench no longer has: every servebench command line of every ```sh
// block must use flags of its command, as `servebench CMD --help` lists
// them. The generated blocks' commands are also run by TestPages.
func TestCommandFlags(t *testing.T) {
	if err := buildBin(); err != nil {
		t.Fatal(err)
	}
	known := map[string]map[string]bool{}
	flagsOf := func(cmd string) map[string]bool {
		if f, ok := known[cmd]; ok {
			return f
		}
		args := append(strings.Fields(cmd), "--help")
		out, err := exec.Command(filepath.Join(binDir, "servebench"), args...).CombinedOutput()
		if err != nil {
			t.Fatalf("servebench %s --help: %v\n%s", cmd, err, out)
		}
		f := map[string]bool{"--help": true}
		for _, m := range helpFlag.FindAllStringSubmatch(string(out), -1) {
			f[m[1]] = true
			if m[2] != "" {
				f[m[2]] = true
			}
		}
		known[cmd] = f
		return f
	}
	union := func(cmds ...string) map[string]bool {
		f := map[string]bool{}
		for _, c := range cmds {
			for k := range flagsOf(c) {
				f[k] = true
			}
		}
		return f
	}
	checked := 0
	for _, path := range pages(t) {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range shellCommands(string(raw)) {
			where := fmt.Sprintf("%s:%d", pageName(path), c.line)
			sub, groups, err := flagGroups(c.words)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			if _, ok := subcommands[sub]; !ok {
				t.Errorf("%s: servebench has no command %q", where, sub)
				continue
			}
			for i, flags := range groups {
				var allowed map[string]bool
				switch {
				case i == 0:
					allowed = flagsOf(sub)
				case sub == "k8s tune" && i == 1:
					allowed = flagsOf("tune")
				case sub == "k8s bench":
					allowed = flagsOf("bench")
				default:
					// After sweep's or tune's --: the flags of the runs they make.
					allowed = union("bench", "sim")
				}
				for _, f := range flags {
					checked++
					if !allowed[f] {
						t.Errorf("%s: `servebench %s` has no flag %s (servebench %s --help lists them)", where, sub, f, sub)
					}
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d flags: the page parser found too few servebench commands", checked)
	}
}

// helpFlag is a flag line of cobra's help: "  -o, --output string" or
// "      --model string"; shorthands of more than one letter (-tp) as
// servebench spells them in its descriptions are not listed there.
var helpFlag = regexp.MustCompile(`(?m)^\s+(?:(-[a-z]+), )?(--[a-z0-9-]+)`)

// subcommands are servebench's commands as flagGroups names them.
var subcommands = map[string]struct{}{
	"bench": {}, "sim": {}, "serve": {}, "sweep": {}, "tune": {}, "compare": {}, "report": {},
	"calibrate": {}, "validate": {}, "merge": {}, "k8s bench": {}, "k8s tune": {}, "proxy": {},
}

// shortFlags are the multi-letter single-dash flags servebench takes.
var shortFlags = map[string]string{"-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size"}

// flagGroups splits a servebench command line into its subcommand and the
// flag names of each part between "--" separators.
func flagGroups(words []string) (sub string, groups [][]string, err error) {
	if len(words) < 2 {
		return "", nil, fmt.Errorf("servebench without a command")
	}
	sub = words[1]
	rest := words[2:]
	if sub == "k8s" && len(rest) > 0 {
		sub += " " + rest[0]
		rest = rest[1:]
	}
	groups = [][]string{nil}
	for _, w := range rest {
		switch {
		case w == "--":
			groups = append(groups, nil)
		case shortFlags[w] != "":
			groups[len(groups)-1] = append(groups[len(groups)-1], shortFlags[w])
		case strings.HasPrefix(w, "--"):
			name, _, _ := strings.Cut(w, "=")
			groups[len(groups)-1] = append(groups[len(groups)-1], name)
		}
	}
	return sub, groups, nil
}

// shellCommand is one servebench invocation in a page's ```sh block.
type shellCommand struct {
	line  int
	words []string
}

// shellCommands finds the servebench invocations of a page's ```sh
// blocks, except those of a generated block that expects an error:
// continuation lines joined, words split as the shell would
// (quotes kept together), an invocation ending at a pipe, list operator,
// redirection or loop keyword.
func shellCommands(page string) []shellCommand {
	var out []shellCommand
	lines := strings.Split(page, "\n")
	for i := 0; i < len(lines); i++ {
		fence := fenceOf(lines[i])
		if fence == "" {
			continue
		}
		isShell := lines[i] == "```sh" && !showsAnError(lines, i)
		for i+1 < len(lines) {
			i++
			if lines[i] == fence {
				break
			}
			if !isShell {
				continue
			}
			start := i + 1
			logical := lines[i]
			for strings.HasSuffix(logical, `\`) && i+1 < len(lines) && lines[i+1] != fence {
				i++
				logical = strings.TrimSuffix(logical, `\`) + " " + lines[i]
			}
			words := shellWords(logical)
			for j := 0; j < len(words); j++ {
				if words[j] != "servebench" {
					continue
				}
				k := j + 1
				for k < len(words) && !endsCommand(words[k]) {
					k++
				}
				out = append(out, shellCommand{line: start, words: words[j:k]})
				j = k
			}
		}
	}
	return out
}

// showsAnError reports whether the ```sh fence at lines[i] is the script
// of a generated block that expects a non-zero exit: an example of an
// error, such as a misspelled flag, which TestPages runs and checks.
func showsAnError(lines []string, i int) bool {
	if i == 0 {
		return false
	}
	marker := lines[i-1]
	if !strings.HasPrefix(marker, markerPrefix) || !strings.HasSuffix(marker, markerSuffix) {
		return false
	}
	b, err := parseOptions(strings.TrimSuffix(strings.TrimPrefix(marker, markerPrefix), markerSuffix))
	return err == nil && b.exit != 0
}

var commandEnd = regexp.MustCompile(`^(\||\|\||&&|&|;|do|done|then|fi|[0-9]?>.*|<.*|\)|\$\(.*)$`)

func endsCommand(w string) bool { return commandEnd.MatchString(w) }

// shellWords splits a line into words: white space separates them except
// inside quotes, which are dropped; a trailing ";" or "&" becomes a word
// of its own; a "#" word starts a comment.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	flush := func() {
		if inWord {
			w := cur.String()
			for _, op := range []string{";", "&"} {
				if len(w) > 1 && strings.HasSuffix(w, op) {
					words = append(words, strings.TrimSuffix(w, op), op)
					w = ""
				}
			}
			if w != "" {
				words = append(words, w)
			}
		}
		cur.Reset()
		inWord = false
	}
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote = r
			inWord = true
		case r == ' ' || r == '\t':
			flush()
		case r == '#' && !inWord:
			return words
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	flush()
	return words
}

func TestShellCommands(t *testing.T) {
	tests := []struct {
		name string
		page string
		want [][]string
	}{
		{
			name: "continuation lines, quotes and a pipe",
			page: "```sh\nservebench sim --model 'Llama 8B' \\\n  --gpu H100 | head\n```\n",
			want: [][]string{{"servebench", "sim", "--model", "Llama 8B", "--gpu", "H100"}},
		},
		{
			name: "two invocations joined by & and a comment",
			page: "```sh\nservebench serve --port 8000 & servebench bench --port 8000 # --nope\n```\n",
			want: [][]string{{"servebench", "serve", "--port", "8000"}, {"servebench", "bench", "--port", "8000"}},
		},
		{
			name: "text blocks and other fences are not commands",
			page: "```text\nservebench sim --nope\n```\n````md\n```sh\nservebench sim --nope\n```\n````\n",
			want: nil,
		},
		{
			name: "a generated example of an error is left to TestPages",
			page: markerPrefix + "exact exit=1" + markerSuffix + "\n```sh\nservebench bench --num-promptz 10\n```\n",
			want: nil,
		},
		{
			name: "a generated block that succeeds is checked",
			page: markerPrefix + "exact exit=0" + markerSuffix + "\n```sh\nservebench sim --gpu H100 > out.txt\n```\n",
			want: [][]string{{"servebench", "sim", "--gpu", "H100"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got [][]string
			for _, c := range shellCommands(tt.page) {
				got = append(got, c.words)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("shellCommands = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFlagGroups(t *testing.T) {
	tests := []struct {
		words      string
		wantSub    string
		wantGroups [][]string
	}{
		{"servebench sim -tp 2 --gpu=H100", "sim", [][]string{{"--tensor-parallel-size", "--gpu"}}},
		{"servebench sweep --vary rate=1,2 -- --model x", "sweep", [][]string{{"--vary"}, {"--model"}}},
		{"servebench k8s tune --namespace a -- --trials 3", "k8s tune", [][]string{{"--namespace"}, {"--trials"}}},
	}
	for _, tt := range tests {
		sub, groups, err := flagGroups(strings.Fields(tt.words))
		if err != nil {
			t.Fatalf("%s: %v", tt.words, err)
		}
		if sub != tt.wantSub || fmt.Sprint(groups) != fmt.Sprint(tt.wantGroups) {
			t.Errorf("%s: got %q %q, want %q %q", tt.words, sub, groups, tt.wantSub, tt.wantGroups)
		}
	}
	if _, _, err := flagGroups([]string{"servebench"}); err == nil {
		t.Error("servebench without a command: no error")
	}
}
