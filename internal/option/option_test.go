package option

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func flag(name string) string { return "--" + strings.ReplaceAll(name, "_", "-") }

func TestErrorNamesAndFlags(t *testing.T) {
	tests := []struct {
		name      string
		err       *Error
		wantBare  string
		wantFlags string
	}{
		{"values", Errorf("{random_input_len} %d: raise {random_input_len} or {random_prefix_len}", 3),
			"random_input_len 3: raise random_input_len or random_prefix_len",
			"--random-input-len 3: raise --random-input-len or --random-prefix-len"},
		{"braces in a value stay", Errorf("{dataset_path} %q: no such file", "/tmp/{x}"),
			`dataset_path "/tmp/{x}": no such file`, `--dataset-path "/tmp/{x}": no such file`},
		{"percent in New", New("{gpu_memory_utilization} above 100% is invalid"),
			"gpu_memory_utilization above 100% is invalid", "--gpu-memory-utilization above 100% is invalid"},
		{"not a placeholder", Errorf(`{"a":1} {A} {x-y}`), `{"a":1} {A} {x-y}`, `{"a":1} {A} {x-y}`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.wantBare {
			t.Errorf("%s: Error() = %q, want %q", tt.name, got, tt.wantBare)
		}
		if got := tt.err.Render(flag); got != tt.wantFlags {
			t.Errorf("%s: Render = %q, want %q", tt.name, got, tt.wantFlags)
		}
	}
}

func TestErrorWraps(t *testing.T) {
	err := Errorf("{dataset_path} %q: %w", "x", fs.ErrNotExist)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the %w argument is not unwrapped")
	}
	if got, want := err.Render(flag), `--dataset-path "x": file does not exist`; got != want {
		t.Fatalf("Render = %q, want %q", got, want)
	}
}

func TestWithCauseIsReachableButNotPrinted(t *testing.T) {
	err := Errorf("dataset file %q: no such file (pass {dataset_path})", "x").WithCause(fs.ErrNotExist)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the cause is not reachable")
	}
	if got, want := err.Error(), `dataset file "x": no such file (pass dataset_path)`; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}
