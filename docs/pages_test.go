//go:build unix

package docs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/golden"
)

// binDir holds the servebench binary the pages' commands run, built once
// as a user would build it; TestMain removes it.
var (
	binDir   string
	buildBin = sync.OnceValue(func() error {
		dir, err := os.MkdirTemp("", "servebench-docs-bin-")
		if err != nil {
			return err
		}
		binDir = dir
		// go test puts its own GOROOT/bin first on PATH.
		goTool, err := exec.LookPath("go")
		if err != nil {
			return fmt.Errorf("the test builds servebench and needs the go command: %w", err)
		}
		build := exec.Command(goTool, "build", "-o", filepath.Join(dir, "servebench"), "../cmd/servebench")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("building servebench: %w\n%s", err, out)
		}
		return nil
	})
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// pages are the documents the test checks, as paths from this directory,
// README first.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(docs)
	return append([]string{filepath.Join("..", "README.md")}, docs...)
}

// pageName is a page's path from the repository root, as messages name it.
func pageName(path string) string {
	if rel, ok := strings.CutPrefix(path, "../"); ok {
		return rel
	}
	return "docs/" + path
}

// TestPages runs every generated block of every page and compares its
// output with the page (or, with -update, rewrites the page). Pages run
// in parallel, the blocks of a page in order in one scratch directory.
func TestPages(t *testing.T) {
	if raceEnabled {
		// The blocks run the servebench binary TestMain builds, which the
		// race detector does not instrument: under -race they would only
		// repeat the plain run's work.
		t.Skip("the pages' commands run a binary built without -race; go test ./docs (without -race) checks them")
	}
	if err := buildBin(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]string{} // block id -> page:line
	ran := 0
	all := pages(t)
	t.Run("page", func(t *testing.T) {
		for _, path := range all {
			t.Run(filepath.Base(path), func(t *testing.T) {
				t.Parallel()
				ids := checkPage(t, path)
				mu.Lock()
				defer mu.Unlock()
				ran++
				for id, where := range ids {
					if other, dup := seen[id]; dup {
						t.Errorf("%s: block id %s is also used at %s", where, id, other)
					}
					seen[id] = where
				}
			})
		}
	})
	if t.Failed() || ran < len(all) {
		return // -run chose some pages: another page may hold the id
	}
	for id := range conclusions {
		if _, ok := seen[id]; !ok {
			t.Errorf("checks_test.go checks a conclusion of block id=%s, which no page has", id)
		}
	}
}

// checkPage runs a page's blocks and returns their ids with where each is.
func checkPage(t *testing.T, path string) map[string]string {
	name := pageName(path)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	blocks, err := parsePage(text)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	ids := map[string]string{}
	if len(blocks) == 0 {
		return ids
	}
	work := scratchDir(t)
	outputs := map[string]string{} // block id -> output, for checks that compare blocks
	var updated strings.Builder
	last := 0
	for _, b := range blocks {
		where := fmt.Sprintf("%s:%d", name, b.line)
		if b.id != "" {
			ids[b.id] = where
		}
		region := text[b.start:b.end]
		updated.WriteString(text[last:b.start])
		last = b.end
		began := time.Now()
		out, status, cpu, err := runScript(t.Context(), work, b)
		t.Logf("%s: %s block ran in %v (%v CPU): %s", where, b.kind, time.Since(began).Round(10*time.Millisecond), cpu.Round(10*time.Millisecond), b.firstCommand())
		if err != nil {
			t.Errorf("%s: `%s`: %v; its output:\n%s", where, b.firstCommand(), err, out)
			updated.WriteString(region)
			continue
		}
		if status != b.exit {
			t.Errorf("%s: `%s` exited with status %d, want %d; its output:\n%s", where, b.firstCommand(), status, b.exit, out)
			updated.WriteString(region)
			continue
		}
		if b.id != "" {
			outputs[b.id] = out
		}
		if check, ok := conclusions[b.id]; ok {
			if err := check(out, outputs); err != nil {
				t.Errorf("%s: `%s`: the page's conclusion from this output no longer holds: %v\n(the output:\n%s)", where, b.firstCommand(), err, out)
			}
		}
		shown := b.shownOutput(region)
		same := region == b.render(out)
		if b.kind == kindWallClock {
			// Figures vary: the shown run stands while its stable part
			// matches and its region is well formed.
			same = region == b.render(shown) && slices.Equal(wallClockLines(shown, b.vary...), wallClockLines(out, b.vary...))
		}
		if golden.Updating() {
			if same {
				updated.WriteString(region)
			} else {
				updated.WriteString(b.render(out))
			}
			continue
		}
		updated.WriteString(region)
		if same {
			continue
		}
		t.Errorf("%s: `%s`: %s\n(go test ./docs -update rewrites the block)", where, b.firstCommand(), describeDrift(b, region, shown, out))
	}
	updated.WriteString(text[last:])
	if golden.Updating() && updated.String() != text {
		if err := os.WriteFile(path, []byte(updated.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// describeDrift says where a block's page text and the output it has now
// part.
func describeDrift(b block, region, shown, out string) string {
	if b.kind == kindWallClock {
		if region != b.render(shown) {
			return "the block is not a text block followed by the wall-clock note"
		}
		line, w, g, _ := firstDifference(strings.Join(wallClockLines(shown, b.vary...), "\n"), strings.Join(wallClockLines(out, b.vary...), "\n"))
		return fmt.Sprintf("the output's labels or counts changed, first at line %d (figures masked, load-dependent warnings left out):\n  page: %s\n  now:  %s", line, w, g)
	}
	if b.render(shown) != region {
		return "the block's output region is not what the test writes (a text block, or Markdown between blank lines)"
	}
	line, w, g, _ := firstDifference(shown, out)
	return fmt.Sprintf("the output differs, first at line %d:\n  page: %q\n  now:  %q", line, w, g)
}

// scratchDir is a page's working directory: empty but for a copy of the
// committed docs/examples at the same path, so commands that name an
// example file work as they do from the repository root.
func scratchDir(t *testing.T) string {
	t.Helper()
	work := t.TempDir()
	err := filepath.WalkDir("examples", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(work, "docs", path)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o444)
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return work
}

// scriptEnv is the whole environment of a block: nothing from the
// machine's (no API keys, no SERVEBENCH_ settings, no Hugging Face cache)
// but the tools on PATH.
func scriptEnv(work string) []string {
	home := filepath.Join(work, ".home")
	return []string{
		"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home,
		"HF_HOME=" + filepath.Join(home, "hf"),
		"TMPDIR=" + os.TempDir(),
		"TZ=UTC",
		"LC_ALL=C",
		"TERM=dumb",
	}
}

// runScript runs a block's commands with bash (-e, pipefail) in work and
// returns what they printed (standard output and error in the order they
// were written) and the exit status. Background jobs the script leaves
// running are killed with its process group when it ends.
func runScript(ctx context.Context, work string, b block) (out string, status int, cpu time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	outFile, err := os.CreateTemp("", "servebench-docs-out-")
	if err != nil {
		return "", 0, 0, err
	}
	defer os.Remove(outFile.Name())
	defer outFile.Close()
	cmd := exec.Command("bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", b.script)
	cmd.Dir = work
	cmd.Env = scriptEnv(work)
	cmd.Stdout, cmd.Stderr = outFile, outFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := os.MkdirAll(filepath.Join(work, ".home"), 0o755); err != nil {
		return "", 0, 0, err
	}
	if err := cmd.Start(); err != nil {
		return "", 0, 0, fmt.Errorf("starting bash: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var timedOut bool
	select {
	case err = <-done:
	case <-ctx.Done():
		timedOut = true
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
	}
	// Servers the script started in the background go with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if cmd.ProcessState != nil {
		// bash's usage includes the commands it waited for.
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	raw, readErr := os.ReadFile(outFile.Name())
	if readErr != nil {
		return "", 0, cpu, readErr
	}
	out = string(raw)
	if timedOut {
		return out, 0, cpu, fmt.Errorf("ran past its timeout of %v (timeout= on the marker)", b.timeout)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return out, exitErr.ExitCode(), cpu, nil
	}
	return out, 0, cpu, err
}

// TestReadmeIsShort keeps the README an entry point: the detail lives in
// the pages it links.
func TestReadmeIsShort(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n >= 250 {
		t.Errorf("README.md has %d lines; keep it under 250 and move detail to a page in docs/", n)
	}
}
