// Package fuzz holds tools/fuzz/run, the script that runs every native fuzz
// target, and the test that keeps every scripted fuzz run bounded.
package fuzz

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fuzzFlag matches go test's -fuzz flag but not -fuzztime or
// -fuzzminimizetime.
var fuzzFlag = regexp.MustCompile(`-fuzz[ =]`)

// TestScriptedFuzzRunsBoundMinimisation checks every fuzz command the
// project scripts or tells people to type: a short -fuzztime alone can
// stall for minutes minimising new inputs (60 s each by default), so each
// must carry -fuzzminimizetime.
func TestScriptedFuzzRunsBoundMinimisation(t *testing.T) {
	root := filepath.Join("..", "..")
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := append([]string{filepath.Join(root, "README.md")}, pages...)
	for _, dir := range []string{".ci", "tools"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			// Go files here are tests like this one, which quote the flag.
			if !d.IsDir() && !strings.HasSuffix(path, ".go") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	commands := map[string]int{}
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if !strings.Contains(line, "go test") || !fuzzFlag.MatchString(line) {
				continue
			}
			commands[path]++
			if !strings.Contains(line, "-fuzzminimizetime") {
				t.Errorf("%s:%d runs go test -fuzz without -fuzzminimizetime: %s", path, n, strings.TrimSpace(line))
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	// The development page tells people how to fuzz, and the script does
	// it: finding neither would mean this test checked nothing.
	for _, want := range []string{filepath.Join(root, "docs", "development.md"), filepath.Join(root, "tools", "fuzz", "run")} {
		if commands[want] == 0 {
			t.Errorf("%s has no go test -fuzz command; this test would check nothing there", want)
		}
	}
}
