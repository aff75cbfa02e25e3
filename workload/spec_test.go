package workload

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestDefaultSpecMatchesVLLM(t *testing.T) {
	s := DefaultSpec()
	checks := []struct {
		name      string
		got, want any
	}{
		{"dataset", s.Dataset, "random"},
		{"num prompts", s.NumPrompts, 1000},
		{"seed", s.Seed, int64(0)},
		{"vocab", s.VocabSize, 32000},
		{"random", s.Random, RandomOptions{InputLen: 1024, OutputLen: 128, RangeRatio: 0, PrefixLen: 0}},
		{"sonnet", s.Sonnet, SonnetOptions{InputLen: 550, OutputLen: 150, PrefixLen: 200}},
		{"sharegpt", s.ShareGPT, ShareGPTOptions{}},
		{"custom", s.Custom, CustomOptions{OutputLen: 256}},
		{"prefix repetition", s.PrefixRepetition, PrefixRepetitionOptions{PrefixLen: 256, SuffixLen: 256, NumPrefixes: 10, OutputLen: 128}},
	}
	for _, c := range checks {
		// Spec holds a slice (Random.Lengths), so its parts compare deeply.
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, c.got, c.want)
		}
	}
	if err := s.Validate(); err != nil {
		t.Errorf("DefaultSpec().Validate() = %v, want nil", err)
	}
}

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Spec)
		want   string // substring of the error; "" means valid
	}{
		{"defaults", func(*Spec) {}, ""},
		{"empty dataset means random", func(s *Spec) { s.Dataset = "" }, ""},
		{"unknown dataset", func(s *Spec) { s.Dataset = "burstgpt" }, `dataset_name "burstgpt": unknown dataset`},
		{"zero prompts", func(s *Spec) { s.NumPrompts = 0 }, "num_prompts 0: must be at least 1"},
		{"zero vocab", func(s *Spec) { s.VocabSize = 0 }, "vocab_size 0"},
		{"random with a path", func(s *Spec) { s.Path = "x.json" }, `dataset_path "x.json": the random dataset reads no file`},
		{"range ratio 1.5", func(s *Spec) { s.Random.RangeRatio = 1.5 }, "random_range_ratio 1.5: must be in [0, 1)"},
		{"range ratio 1", func(s *Spec) { s.Random.RangeRatio = 1 }, "random_range_ratio 1: must be in [0, 1)"},
		{"range ratio negative", func(s *Spec) { s.Random.RangeRatio = -0.1 }, "random_range_ratio -0.1"},
		{"range ratio NaN", func(s *Spec) { s.Random.RangeRatio = math.NaN() }, "random_range_ratio NaN"},
		{"range ratio 0.99", func(s *Spec) { s.Random.RangeRatio = 0.99 }, ""},
		{"negative input", func(s *Spec) { s.Random.InputLen = -1 }, "random_input_len -1"},
		{"negative prefix", func(s *Spec) { s.Random.PrefixLen = -1 }, "random_prefix_len -1"},
		{"zero output", func(s *Spec) { s.Random.OutputLen = 0 }, "random_output_len 0"},
		{"empty prompts", func(s *Spec) { s.Random.InputLen = 0 }, "random_input_len 0: too small, the shortest prompt would have 0 tokens"},
		{"range ratio empties short prompts", func(s *Spec) { s.Random.InputLen = 1; s.Random.RangeRatio = 0.5 }, "random_input_len 1: too small"},
		{"prefix alone is enough", func(s *Spec) { s.Random.InputLen = 0; s.Random.PrefixLen = 5 }, ""},
		{"sharegpt needs a path", func(s *Spec) { s.Dataset = DatasetShareGPT }, "dataset_path is required for dataset_name sharegpt (ShareGPT's JSON; without it, dataset_name random random_length_dist sharegpt"},
		{"sharegpt negative output", func(s *Spec) { s.Dataset = DatasetShareGPT; s.Path = "a"; s.ShareGPT.OutputLen = -3 }, "sharegpt_output_len -3"},
		{"sharegpt ok", func(s *Spec) { s.Dataset = DatasetShareGPT; s.Path = "a" }, ""},
		{"custom zero output", func(s *Spec) { s.Dataset = DatasetCustom; s.Path = "a"; s.Custom.OutputLen = 0 }, "custom_output_len 0"},
		{"sonnet needs a path", func(s *Spec) { s.Dataset = DatasetSonnet }, "dataset_path is required for dataset_name sonnet"},
		{"sonnet prefix over input", func(s *Spec) { s.Dataset = DatasetSonnet; s.Path = "a"; s.Sonnet.PrefixLen = 600 }, "sonnet_prefix_len 600: must not exceed sonnet_input_len 550"},
		{"sonnet zero input", func(s *Spec) { s.Dataset = DatasetSonnet; s.Path = "a"; s.Sonnet.InputLen = 0 }, "sonnet_input_len 0"},
		{"sonnet zero output", func(s *Spec) { s.Dataset = DatasetSonnet; s.Path = "a"; s.Sonnet.OutputLen = 0 }, "sonnet_output_len 0"},
		{"sonnet negative prefix", func(s *Spec) { s.Dataset = DatasetSonnet; s.Path = "a"; s.Sonnet.PrefixLen = -1 }, "sonnet_prefix_len -1"},
		{"prefix repetition with a path", func(s *Spec) { s.Dataset = DatasetPrefixRepetition; s.Path = "a" }, "the prefix_repetition dataset reads no file"},
		{"prefix repetition fewer prompts than prefixes", func(s *Spec) { s.Dataset = DatasetPrefixRepetition; s.NumPrompts = 5 }, "num_prompts 5: must be >= prefix_repetition_num_prefixes 10"},
		{"prefix repetition zero prefixes", func(s *Spec) { s.Dataset = DatasetPrefixRepetition; s.PrefixRepetition.NumPrefixes = 0 }, "prefix_repetition_num_prefixes 0"},
		{"prefix repetition empty prompts", func(s *Spec) {
			s.Dataset = DatasetPrefixRepetition
			s.PrefixRepetition.PrefixLen, s.PrefixRepetition.SuffixLen = 0, 0
		}, "prompts would be empty"},
		{"prefix repetition negative suffix", func(s *Spec) { s.Dataset = DatasetPrefixRepetition; s.PrefixRepetition.SuffixLen = -1 }, "prefix_repetition_suffix_len -1"},
		{"prefix repetition zero output", func(s *Spec) { s.Dataset = DatasetPrefixRepetition; s.PrefixRepetition.OutputLen = 0 }, "prefix_repetition_output_len 0"},
		{"lengths replace the length options", func(s *Spec) {
			s.NumPrompts = 2
			s.Random.Lengths = []RequestLengths{{Input: 3, Output: 0}, {Input: 4, Output: 1}}
			s.Random.InputLen, s.Random.OutputLen = 0, 0
		}, ""},
		{"a lengths file is read when built", func(s *Spec) { s.Random.LengthsFrom = "run.json"; s.Random.OutputLen = 0 }, ""},
		{"lengths exclude a range ratio", func(s *Spec) { s.Random.LengthsFrom = "run.json"; s.Random.RangeRatio = 0.1 }, `random_range_ratio 0.1: the lengths from "run.json" are exact`},
		{"lengths with a negative prefix", func(s *Spec) { s.Random.Lengths = []RequestLengths{{Input: 1, Output: 1}}; s.Random.PrefixLen = -1 }, "random_prefix_len -1"},
		{"too few lengths", func(s *Spec) { s.Random.Lengths = []RequestLengths{{Input: 1, Output: 1}} }, "num_prompts 1000 but RandomOptions.Lengths has 1 requests"},
		{"lengths for another dataset", func(s *Spec) { s.Dataset = DatasetCustom; s.Path = "a"; s.Random.LengthsFrom = "run.json" }, "random_lengths_from is for the random dataset, not custom"},
		{"other datasets' options are not read", func(s *Spec) { s.Sonnet.InputLen = -5; s.Custom.OutputLen = 0 }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := DefaultSpec()
			tt.modify(&s)
			err := s.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %q, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("Validate() = %q: not one line", err)
			}
		})
	}
}
