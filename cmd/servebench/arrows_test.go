package main

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/servebench/servebench/"

// importsOf lists what the non-test Go files of dir import from this
// module.
func importsOf(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(path, module); ok {
				out[rest] = true
			}
		}
	}
	if len(files) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	return out
}

// TestArrowsPointDown: cmd imports the run spec and the packages that run
// things, never the engine, the performance model, the workload or the
// tokenizer; report never imports bench (DESIGN.md's arrows).
func TestArrowsPointDown(t *testing.T) {
	allowed := map[string]bool{"runspec": true, "bench": true, "sim": true, "serve": true, "sweep": true, "tune": true,
		"calibrate": true, "validate": true, "report": true, "deploy/k8s": true}
	cmd := importsOf(t, ".")
	if !cmd["runspec"] {
		t.Errorf("cmd does not compose the run spec: imports %v", cmd)
	}
	for pkg := range cmd {
		if !allowed[pkg] && !strings.HasPrefix(pkg, "internal/") {
			t.Errorf("cmd imports %s: it may import only the run spec and the packages that run things", pkg)
		}
	}
	for _, low := range []string{"runspec", "report"} {
		for pkg := range importsOf(t, filepath.Join("..", "..", low)) {
			switch pkg {
			case "bench", "sim", "serve", "sweep", "tune", "calibrate":
				t.Errorf("%s imports %s: the arrow points up", low, pkg)
			}
		}
	}
}
