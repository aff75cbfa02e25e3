package validate

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/servebench/servebench/internal/golden"
)

// builtinReport simulates the whole built-in corpus once for the tests that
// judge it.
var builtinReport = sync.OnceValues(func() (*Report, error) {
	c, err := LoadBuiltin()
	if err != nil {
		return nil, err
	}
	return Evaluate(context.Background(), c, c.Runs, Options{})
})

// guardPoints is how far a family's holdout median may rise above the
// committed figure before the guard fails.
const guardPoints = 2

// TestCorpusHoldoutErrorGuard is the CI guard: it simulates every run of the
// built-in corpus and fails when a family's holdout median absolute error
// rises more than 2 points above corpus/expected.json, or when the corpus
// changed without the file being regenerated (go test ./validate -update).
func TestCorpusHoldoutErrorGuard(t *testing.T) {
	if testing.Short() {
		t.Skip("a numeric study of the whole corpus (about 8 s, 100 s under -race); run without -short")
	}
	rep, err := builtinReport()
	if err != nil {
		t.Fatal(err)
	}
	got := ExpectedOf(rep)
	if got.Runs == 0 || len(got.Families) == 0 {
		t.Fatalf("no holdout run was simulated: %+v", got)
	}
	path := filepath.Join("corpus", ExpectedFile)
	committed, err := LoadExpected()
	if golden.Updating() {
		for _, f := range Families() {
			if err == nil {
				t.Logf("%s: holdout median %.2f%% → %.2f%%", f.Title(), committed.Families[f].MedianAbs, got.Families[f].MedianAbs)
			}
		}
		data, err := got.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if committed.Runs != got.Runs {
		t.Fatalf("%s counts %d holdout runs, the corpus has %d: regenerate it with go test ./validate -update", path, committed.Runs, got.Runs)
	}
	for _, f := range Families() {
		now, ok := got.Families[f]
		if !ok {
			continue
		}
		was, ok := committed.Families[f]
		if !ok {
			t.Errorf("%s: no committed figure in %s: regenerate it with go test ./validate -update", f.Title(), path)
			continue
		}
		if now.MedianAbs > was.MedianAbs+guardPoints {
			t.Errorf("%s: holdout median absolute error rose from %.2f%% to %.2f%% (more than %d points)", f.Title(), was.MedianAbs, now.MedianAbs, guardPoints)
		}
	}
}

// BenchmarkBuiltinCorpus times one validation of the whole built-in corpus
// (the CI guard's cost; the brief's budget is 30 s on 2 cores).
func BenchmarkBuiltinCorpus(b *testing.B) {
	c, err := LoadBuiltin()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Evaluate(b.Context(), c, c.Runs, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(c.Runs)), "runs")
}
