package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/servebench/servebench/internal/option"
	"github.com/servebench/servebench/runspec"
)

// Every option name a library puts in an error must be a flag some command
// defines, so the CLI never prints a flag that does not exist.
func TestOptionNamesAreFlags(t *testing.T) {
	flags := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { flags["--"+f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	placeholder := regexp.MustCompile(`option\.(?:Errorf|New)\((?s:.*?)\)\n`)
	name := regexp.MustCompile(`\{([a-z][a-z0-9_]*)\}`)
	root := filepath.Join("..", "..")
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "cmd" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, call := range placeholder.FindAllString(string(src), -1) {
			for _, m := range name.FindAllStringSubmatch(call, -1) {
				checked++
				if !flags[runspec.FlagFor(m[1])] {
					t.Errorf("%s names option %q, but no command defines %s", path, m[1], runspec.FlagFor(m[1]))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 30 {
		t.Fatalf("found only %d option names in library errors; the scan is broken", checked)
	}
}

func TestWithFlagNames(t *testing.T) {
	inner := option.Errorf("{random_input_len} %d: raise {random_prefix_len}", 0)
	wrapped := fmt.Errorf("building the workload: %w", inner)
	got := runspec.FlagNames(exitCodeError{code: 2, err: wrapped})
	if want := "building the workload: --random-input-len 0: raise --random-prefix-len"; got.Error() != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	var exit exitCodeError
	if !errors.As(got, &exit) || exit.code != 2 || !errors.Is(got, inner) {
		t.Fatal("the rewritten error no longer unwraps to its parts")
	}
	joined := runspec.FlagNames(errors.Join(option.New("{burstiness} bad"), option.New("{seed} bad")))
	if want := "--burstiness bad\n--seed bad"; joined.Error() != want {
		t.Fatalf("joined: got %q, want %q", joined, want)
	}
	plain := errors.New("no options here")
	if runspec.FlagNames(plain) != plain {
		t.Fatal("an error without option names was rewrapped")
	}
}

// Through the command line, a library's validation error names the flag.
func TestLibraryErrorsNameTheFlag(t *testing.T) {
	_, _, err := runCLI(t, "sim", "--model", "Qwen2-0.5B", "--gpu", "H100", "--num-prompts", "3", "--random-range-ratio", "1.5")
	if err == nil || !strings.Contains(err.Error(), "--random-range-ratio 1.5: must be in [0, 1)") {
		t.Fatalf("err = %v, want the flag named", err)
	}
}
