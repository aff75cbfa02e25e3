package runspec

import (
	"strings"
	"testing"
)

// TestRandomLengthsFromFlag: --random-lengths-from reaches the dataset
// spec, and the flags it replaces are refused when given with it rather
// than silently ignored.
func TestRandomLengthsFromFlag(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // substring of the error; "" means accepted
	}{
		{"alone", nil, ""},
		{"with a prefix", []string{"--random-prefix-len", "16"}, ""},
		{"with --random-input-len", []string{"--random-input-len", "512"},
			`random_input_len and random_lengths_from "run.json": the file gives every request's lengths; drop random_input_len`},
		{"with --random-output-len at its default", []string{"--random-output-len", "128"}, "drop random_output_len"},
		{"with --input-len", []string{"--input-len", "100"}, "drop input_len"},
		{"with --output-len", []string{"--output-len", "100"}, "drop output_len"},
		{"with a range ratio", []string{"--random-range-ratio", "0.5"}, `random_range_ratio 0.5: the lengths from "run.json" are exact`},
		{"for another dataset", []string{"--dataset-name", "sharegpt", "--dataset-path", "sg.json", "--output-len", "9"},
			"random_lengths_from is for the random dataset, not sharegpt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, kind := range []Kind{Sim, Bench} {
				s := mustParse(t, kind, append([]string{"--random-lengths-from", "run.json", "--num-prompts", "5"}, tt.args...))
				r, err := s.ResolveWorkload()
				if tt.want == "" {
					if err != nil {
						t.Fatalf("%s: %v", kind, err)
					}
					if got := r.Spec.Random.LengthsFrom; got != "run.json" {
						t.Fatalf("%s: LengthsFrom %q, want run.json", kind, got)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("%s: error %v, want one containing %q", kind, err, tt.want)
				}
				if flagged := FlagNames(err).Error(); !strings.Contains(flagged, "--random-lengths-from") && !strings.Contains(flagged, "--random-range-ratio") {
					t.Fatalf("%s: the CLI's error %q names no flag", kind, flagged)
				}
			}
		})
	}
}

// TestRandomLengthDistFlag: --random-length-dist reaches the dataset spec,
// uniform by default, and its contradictions come back naming flags.
func TestRandomLengthDistFlag(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // the LengthDist when accepted, else a substring of the error
		ok   bool
	}{
		{"default", nil, "uniform", true},
		{"sharegpt", []string{"--random-length-dist", "sharegpt", "--random-input-len", "217"}, "sharegpt", true},
		{"unknown", []string{"--random-length-dist", "zipf"}, `--random-length-dist "zipf": unknown (want one of uniform, sharegpt)`, false},
		{"with a range ratio", []string{"--random-length-dist", "sharegpt", "--random-range-ratio", "0.2"},
			"--random-range-ratio 0.2: --random-length-dist sharegpt sets the spread; drop --random-range-ratio", false},
		{"with a lengths file", []string{"--random-length-dist", "sharegpt", "--random-lengths-from", "run.json"},
			`--random-length-dist sharegpt draws the lengths --random-lengths-from "run.json" gives`, false},
		{"for another dataset", []string{"--random-length-dist", "sharegpt", "--dataset-name", "sharegpt", "--dataset-path", "sg.json"},
			"--random-length-dist is for the random dataset, not sharegpt", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, kind := range []Kind{Sim, Bench} {
				s := mustParse(t, kind, append([]string{"--num-prompts", "5"}, tt.args...))
				r, err := s.ResolveWorkload()
				if tt.ok {
					if err != nil {
						t.Fatalf("%s: %v", kind, err)
					}
					if got := r.Spec.Random.LengthDist; got != tt.want {
						t.Fatalf("%s: LengthDist %q, want %q", kind, got, tt.want)
					}
					continue
				}
				if err == nil {
					t.Fatalf("%s: accepted, want an error containing %q", kind, tt.want)
				}
				if flagged := FlagNames(err).Error(); !strings.Contains(flagged, tt.want) {
					t.Fatalf("%s: error %q, want one containing %q", kind, flagged, tt.want)
				}
			}
		})
	}
}
