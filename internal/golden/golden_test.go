package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that keeps failures instead of stopping the test.
type recorder struct {
	testing.TB
	name   string
	failed bool
}

func (r *recorder) Name() string          { return r.name }
func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }

func TestCheckFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "x.golden")
	tests := []struct {
		name       string
		existing   string // "" means no file
		got        string
		update     bool
		wantFailed bool
		wantFile   string
	}{
		{name: "equal", existing: "a\n", got: "a\n", wantFile: "a\n"},
		{name: "different", existing: "a\n", got: "b\n", wantFailed: true, wantFile: "a\n"},
		{name: "missing", got: "a\n", wantFailed: true},
		{name: "update rewrites", existing: "a\n", got: "b\n", update: true, wantFile: "b\n"},
		{name: "update creates", got: "c\n", update: true, wantFile: "c\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = os.RemoveAll(filepath.Dir(path))
			if tt.existing != "" {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tt.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			old := *update
			*update = tt.update
			defer func() { *update = old }()
			r := &recorder{TB: t, name: "TestX"}
			CheckFile(r, path, []byte(tt.got))
			if r.failed != tt.wantFailed {
				t.Fatalf("failed = %v, want %v", r.failed, tt.wantFailed)
			}
			data, err := os.ReadFile(path)
			if tt.wantFile == "" {
				if err == nil {
					t.Fatalf("file exists: %q", data)
				}
				return
			}
			if string(data) != tt.wantFile {
				t.Fatalf("file %q, want %q", data, tt.wantFile)
			}
		})
	}
}

func TestPathIsNamedFromTheTest(t *testing.T) {
	r := &recorder{TB: t, name: "TestRun/v0 chunked/seed=1"}
	if got, want := Path(r), filepath.Join("testdata", "golden", "TestRun_v0_chunked_seed_1.golden"); got != want {
		t.Fatalf("Path = %q, want %q", got, want)
	}
}
