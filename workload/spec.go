package workload

import (
	"math"
	"slices"
	"strings"

	"github.com/servebench/servebench/internal/option"
)

// Dataset names accepted in Spec.Dataset (vLLM's --dataset-name values).
const (
	DatasetRandom           = "random"
	DatasetSonnet           = "sonnet"
	DatasetShareGPT         = "sharegpt"
	DatasetCustom           = "custom"
	DatasetPrefixRepetition = "prefix_repetition"
)

// datasetNames lists the accepted dataset names, the default first.
func datasetNames() []string {
	return []string{DatasetRandom, DatasetSonnet, DatasetShareGPT, DatasetCustom, DatasetPrefixRepetition}
}

// Defaults, as in vLLM's `vllm bench serve`.
const (
	DefaultNumPrompts = 1000
	// DefaultVocabSize is the vocabulary assumed for token-ID prompts when no
	// tokenizer is given (Llama-2's).
	DefaultVocabSize = 32000
)

// RandomOptions are the --random-* flags.
type RandomOptions struct {
	InputLen   int     // --random-input-len
	OutputLen  int     // --random-output-len
	RangeRatio float64 // --random-range-ratio, in [0, 1)
	PrefixLen  int     // --random-prefix-len: one shared prefix for all prompts
	// Lengths are per-request lengths, in order: request i's prompt has
	// Lengths[i].Input tokens after the shared prefix (less the special
	// tokens, as InputLen) and asks for max(1, Lengths[i].Output). They
	// override InputLen and OutputLen, exclude RangeRatio, and must cover
	// NumPrompts requests; the first NumPrompts are used.
	Lengths []RequestLengths
	// LengthsFrom (--random-lengths-from) is the result JSON (see
	// ParseLengths) Lengths is read from, when the workload is built, if
	// Lengths is nil.
	LengthsFrom string
	// LengthDist (--random-length-dist) is how lengths spread around
	// InputLen and OutputLen when neither Lengths nor LengthsFrom gives
	// them: LengthDistUniform ("" too) or LengthDistShareGPT, whose
	// lengths the workload draws from Seed when it is built.
	LengthDist string
}

// SonnetOptions are the --sonnet-* flags.
type SonnetOptions struct {
	InputLen  int // --sonnet-input-len
	OutputLen int // --sonnet-output-len
	PrefixLen int // --sonnet-prefix-len
}

// ShareGPTOptions are the ShareGPT flags.
type ShareGPTOptions struct {
	// OutputLen (--sharegpt-output-len) overrides each conversation's reply
	// length; 0 takes the reply's own token count.
	OutputLen      int
	NoOversample   bool // --no-oversample
	DisableShuffle bool // --disable-shuffle
}

// CustomOptions are the custom JSONL dataset flags.
type CustomOptions struct {
	// OutputLen (--custom-output-len) is max_tokens for lines that do not set
	// their own "output_tokens" or "max_tokens".
	OutputLen      int
	NoOversample   bool // --no-oversample
	DisableShuffle bool // --disable-shuffle
}

// PrefixRepetitionOptions are the --prefix-repetition-* flags.
type PrefixRepetitionOptions struct {
	PrefixLen   int
	SuffixLen   int
	NumPrefixes int
	OutputLen   int
}

// Spec says which prompts to build. Only the options of the selected
// dataset are read.
type Spec struct {
	Dataset    string // --dataset-name; "" means random
	Path       string // --dataset-path
	NumPrompts int    // --num-prompts
	Seed       int64  // --seed
	// VocabSize (--vocab-size) is the vocabulary token-ID prompts are drawn
	// from when no tokenizer is given; set it to the served model's.
	VocabSize int

	Random           RandomOptions
	Sonnet           SonnetOptions
	ShareGPT         ShareGPTOptions
	Custom           CustomOptions
	PrefixRepetition PrefixRepetitionOptions
}

// DefaultSpec returns vLLM's defaults: 1000 random prompts of 1024 input and
// 128 output tokens, seed 0.
func DefaultSpec() Spec {
	return Spec{
		Dataset:          DatasetRandom,
		NumPrompts:       DefaultNumPrompts,
		VocabSize:        DefaultVocabSize,
		Random:           RandomOptions{InputLen: 1024, OutputLen: 128},
		Sonnet:           SonnetOptions{InputLen: 550, OutputLen: 150, PrefixLen: 200},
		Custom:           CustomOptions{OutputLen: 256},
		PrefixRepetition: PrefixRepetitionOptions{PrefixLen: 256, SuffixLen: 256, NumPrefixes: 10, OutputLen: 128},
	}
}

func (s Spec) dataset() string {
	if s.Dataset == "" {
		return DatasetRandom
	}
	return s.Dataset
}

// Validate reports the first invalid or contradictory option as a one-line
// error naming its flag. Checks that need the tokenizer (special-token
// counts, the sonnet base prompt's length) happen in Build.
func (s Spec) Validate() error {
	name := s.dataset()
	known := false
	for _, n := range datasetNames() {
		known = known || n == name
	}
	if !known {
		return option.Errorf("{dataset_name} %q: unknown dataset (want one of %s)", s.Dataset, strings.Join(datasetNames(), ", "))
	}
	if s.NumPrompts < 1 {
		return option.Errorf("{num_prompts} %d: must be at least 1", s.NumPrompts)
	}
	if s.VocabSize < 1 {
		return option.Errorf("{vocab_size} %d: must be at least 1", s.VocabSize)
	}
	switch name {
	case DatasetRandom, DatasetPrefixRepetition:
		if s.Path != "" {
			return option.Errorf("{dataset_path} %q: the %s dataset reads no file (pass {dataset_name} sharegpt, custom or sonnet)", s.Path, name)
		}
	default:
		if s.Path == "" && name == DatasetShareGPT {
			return option.Errorf("{dataset_path} is required for {dataset_name} sharegpt (ShareGPT's JSON; without it, {dataset_name} random {random_length_dist} sharegpt spreads random prompts as ShareGPT's)")
		}
		if s.Path == "" {
			return option.Errorf("{dataset_path} is required for {dataset_name} %s", name)
		}
	}
	if name != DatasetRandom && s.Random.LengthDist == LengthDistShareGPT {
		return option.Errorf("{random_length_dist} is for the random dataset, not %s (pass {dataset_name} random)", name)
	}
	if name != DatasetRandom && s.Random.useLengths() {
		return option.Errorf("{random_lengths_from} is for the random dataset, not %s (pass {dataset_name} random)", name)
	}
	switch name {
	case DatasetRandom:
		return s.Random.validate(s.NumPrompts)
	case DatasetSonnet:
		return s.Sonnet.validate()
	case DatasetShareGPT:
		if s.ShareGPT.OutputLen < 0 {
			return option.Errorf("{sharegpt_output_len} %d: must be >= 1 (or 0 to use each reply's length)", s.ShareGPT.OutputLen)
		}
	case DatasetCustom:
		if s.Custom.OutputLen < 1 {
			return option.Errorf("{custom_output_len} %d: must be at least 1", s.Custom.OutputLen)
		}
	case DatasetPrefixRepetition:
		return s.PrefixRepetition.validate(s.NumPrompts)
	}
	return nil
}

func (o RandomOptions) validate(numPrompts int) error {
	r := o.RangeRatio
	switch {
	case o.LengthDist != "" && !slices.Contains(lengthDistNames(), o.LengthDist):
		return option.Errorf("{random_length_dist} %q: unknown (want one of %s)", o.LengthDist, strings.Join(lengthDistNames(), ", "))
	case o.PrefixLen < 0:
		return option.Errorf("{random_prefix_len} %d: must be >= 0", o.PrefixLen)
	}
	if o.LengthDist == LengthDistShareGPT && o.Lengths == nil {
		switch {
		case o.LengthsFrom != "":
			return option.Errorf("{random_length_dist} sharegpt draws the lengths {random_lengths_from} %q gives; pass one of them", o.LengthsFrom)
		case r != 0:
			return option.Errorf("{random_range_ratio} %g: {random_length_dist} sharegpt sets the spread; drop {random_range_ratio}", r)
		case o.InputLen < 1:
			return option.Errorf("{random_input_len} %d: the mean prompt length must be at least 1 with {random_length_dist} sharegpt", o.InputLen)
		}
		return o.validateMeans()
	}
	if o.useLengths() {
		switch {
		case r != 0:
			return option.Errorf("{random_range_ratio} %g: the lengths from %s are exact; drop {random_range_ratio}", r, o.lengthsSource())
		case o.Lengths == nil:
			return nil // read and checked when the workload is built
		}
		return o.checkLengths(numPrompts, 0)
	}
	return o.validateMeans()
}

// validateMeans checks the lengths the requests are drawn around.
func (o RandomOptions) validateMeans() error {
	r := o.RangeRatio
	switch {
	case math.IsNaN(r) || r < 0 || r >= 1:
		return option.Errorf("{random_range_ratio} %g: must be in [0, 1)", r)
	case o.InputLen < 0:
		return option.Errorf("{random_input_len} %d: must be >= 0", o.InputLen)
	case o.OutputLen < 1:
		return option.Errorf("{random_output_len} %d: must be at least 1", o.OutputLen)
	}
	return o.checkMinInput(0)
}

// checkMinInput is vLLM's guard that even the shortest sampled prompt has a
// token.
func (o RandomOptions) checkMinInput(numSpecial int) error {
	real := max(0, o.InputLen-numSpecial)
	minTotal := o.PrefixLen + int(math.Floor(float64(real)*(1-o.RangeRatio)))
	if minTotal < 1 {
		return option.Errorf("{random_input_len} %d: too small, the shortest prompt would have %d tokens "+
			"(%d special tokens, {random_range_ratio} %g); raise {random_input_len} or {random_prefix_len}, or lower {random_range_ratio}",
			o.InputLen, minTotal, numSpecial, o.RangeRatio)
	}
	return nil
}

func (o SonnetOptions) validate() error {
	switch {
	case o.InputLen < 1:
		return option.Errorf("{sonnet_input_len} %d: must be at least 1", o.InputLen)
	case o.OutputLen < 1:
		return option.Errorf("{sonnet_output_len} %d: must be at least 1", o.OutputLen)
	case o.PrefixLen < 0:
		return option.Errorf("{sonnet_prefix_len} %d: must be >= 0", o.PrefixLen)
	case o.PrefixLen > o.InputLen:
		return option.Errorf("{sonnet_prefix_len} %d: must not exceed {sonnet_input_len} %d", o.PrefixLen, o.InputLen)
	}
	return nil
}

func (o PrefixRepetitionOptions) validate(numPrompts int) error {
	switch {
	case o.PrefixLen < 0:
		return option.Errorf("{prefix_repetition_prefix_len} %d: must be >= 0", o.PrefixLen)
	case o.SuffixLen < 0:
		return option.Errorf("{prefix_repetition_suffix_len} %d: must be >= 0", o.SuffixLen)
	case o.PrefixLen+o.SuffixLen < 1:
		return option.Errorf("{prefix_repetition_prefix_len} 0 and {prefix_repetition_suffix_len} 0: prompts would be empty; set either to at least 1")
	case o.NumPrefixes < 1:
		return option.Errorf("{prefix_repetition_num_prefixes} %d: must be at least 1", o.NumPrefixes)
	case o.OutputLen < 1:
		return option.Errorf("{prefix_repetition_output_len} %d: must be at least 1", o.OutputLen)
	case numPrompts < o.NumPrefixes:
		return option.Errorf("{num_prompts} %d: must be >= {prefix_repetition_num_prefixes} %d (each prefix gets num-prompts/num-prefixes prompts)", numPrompts, o.NumPrefixes)
	}
	return nil
}
