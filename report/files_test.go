package report

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/metrics"
)

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	if err := WriteAtomic(path, []byte("first"), false); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(path, []byte("second"), false); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("writing over an existing result: %v, want ErrExist", err)
	}
	if err := WriteAtomic(filepath.Join(dir, "s.json"), []byte("a"), true); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(filepath.Join(dir, "s.json"), []byte("b"), true); err != nil {
		t.Fatal(err)
	}
	r, _ := os.ReadFile(path)
	s, _ := os.ReadFile(filepath.Join(dir, "s.json"))
	if string(r) != "first" || string(s) != "b" {
		t.Fatalf("result %q summary %q", r, s)
	}
	if names := listDir(t, dir); len(names) != 2 {
		t.Fatalf("files left: %v", names)
	}
	// Into a directory that cannot take the file, nothing is created.
	if err := WriteAtomic(filepath.Join(dir, "r.json", "x.json"), []byte("x"), true); err == nil {
		t.Fatal("wrote under a file")
	}
}

func TestErrorSectionOrdersAndBoundsReasons(t *testing.T) {
	errs := map[string]int{"HTTP 503: busy": 5, "canceled": 7, "b": 1, "a": 1}
	for i := range maxErrorRows {
		errs["rare "+strconv.Itoa(i)] = 1
	}
	var b bytes.Buffer
	s := metrics.Summary{Failed: 26, Errors: errs}
	if err := WriteErrorSection(&b, &s); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	want := []string{
		"------------Failed Requests by Reason-------------",
		"canceled                                 7         ",
		"HTTP 503: busy                           5         ",
		"a                                        1         ",
		"b                                        1         ",
	}
	if len(lines) != maxErrorRows+3 || !slices.Equal(lines[:len(want)], want) || !strings.HasPrefix(lines[maxErrorRows+1], "(4 other reasons)                        4") {
		t.Fatalf("section:\n%s", b.String())
	}
	b.Reset()
	if err := WriteErrorSection(&b, &metrics.Summary{Completed: 3}); err != nil || b.Len() != 0 {
		t.Fatalf("a run without failures printed %q", b.String())
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// Two runs that would get the same default name (same second) get
// distinct files: the second takes a -2 suffix for both result and records.
func TestDefaultNamesNeverCollide(t *testing.T) {
	dir := t.TempDir()
	info := RunInfo{Date: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Backend: "openai", ModelID: "m", RequestRate: 1}
	opts := OutputOptions{SaveResult: true, ResultDir: dir}
	var paths []string
	for range 3 {
		outs, err := OpenFiles(opts, &info)
		if err != nil {
			t.Fatal(err)
		}
		defer outs.Close()
		if _, err := outs.records.WriteString("{}\n"); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, outs.resultPath, outs.RecordsPath)
	}
	want := []string{"openai-1.0qps-m-20260102-030405.json", "openai-1.0qps-m-20260102-030405.records.jsonl",
		"openai-1.0qps-m-20260102-030405-2.json", "openai-1.0qps-m-20260102-030405-2.records.jsonl",
		"openai-1.0qps-m-20260102-030405-3.json", "openai-1.0qps-m-20260102-030405-3.records.jsonl"}
	for i, p := range paths {
		if filepath.Base(p) != want[i] {
			t.Fatalf("paths %v, want %v", paths, want)
		}
	}
	// A result saved under a default name another run took meanwhile goes
	// to the next free name; the other run's file is untouched.
	outs, err := OpenFiles(opts, &info)
	if err != nil {
		t.Fatal(err)
	}
	defer outs.Close()
	if err := os.WriteFile(outs.resultPath, []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if err := outs.Write(&bytes.Buffer{}, &stderr, &Result{Info: info}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "openai-1.0qps-m-20260102-030405-4.json")); string(b) != "theirs" {
		t.Fatalf("the other run's result was overwritten: %q", b)
	}
	if !strings.Contains(stderr.String(), "Saved result to "+filepath.Join(dir, "openai-1.0qps-m-20260102-030405-5.json")) {
		t.Fatalf("saved where? %s", stderr.String())
	}
	// Its records went along: result and records stay a pair.
	if outs.RecordsPath != filepath.Join(dir, "openai-1.0qps-m-20260102-030405-5.records.jsonl") {
		t.Fatalf("records at %s, want beside the result", outs.RecordsPath)
	}
	if _, err := os.Stat(filepath.Join(dir, "openai-1.0qps-m-20260102-030405-4.records.jsonl")); err == nil {
		t.Fatal("records left under the name the other run's result took")
	}
}
