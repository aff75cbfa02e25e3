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
