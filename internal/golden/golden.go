// Package golden compares test output with files under testdata and
// rewrites them when the test binary runs with -update, so every package
// spells the golden-file ritual the same way.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata")

// Updating reports whether the run rewrites golden files (-update), for
// tests that regenerate something other than a plain comparison.
func Updating() bool { return *update }

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Path is the golden file named from the running test: testdata/golden/
// <t.Name(), with characters unsafe in file names as "_">.golden.
func Path(t testing.TB) string {
	name := unsafeName.ReplaceAllString(t.Name(), "_")
	return filepath.Join("testdata", "golden", name+".golden")
}

// Check compares got with the golden file named from the running test.
func Check(t testing.TB, got []byte) {
	t.Helper()
	CheckFile(t, Path(t), got)
}

// CheckFile compares got with the file at path, creating or rewriting it
// under -update. A difference fails the test with a diff and the command
// that accepts it.
func CheckFile(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file: %v (go test -run '%s' -update creates it)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("output differs from %s (-want +got; go test -run '%s' -update accepts it):\n%s", path, t.Name(), diff)
	}
}
