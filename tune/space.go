// Package tune searches `vllm serve` flags for the best throughput under
// an SLO: a search space, validation of every point through the vllm
// resolver before anything runs, samplers fed with penalised failures
// (random and CMA-ES from goptuna, TPE our own in internal/tpe, all
// behind goptuna's study API), and studies kept in SQLite or PostgreSQL
// so they resume after a crash and several workers can share one.
package tune

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/vllm"
)

// Kind is a parameter's type.
type Kind string

const (
	KindInt    Kind = "int"
	KindFloat  Kind = "float"
	KindChoice Kind = "choice"
	KindBool   Kind = "bool"
	// KindPinned is a fixed value: passed to every trial, never sampled.
	KindPinned Kind = "pinned"
)

// Param is one dimension of the search space. Name is the vLLM option in
// snake case (max_num_seqs); the flag is --max-num-seqs.
type Param struct {
	Name string `yaml:"-" json:"name"`
	Kind Kind   `yaml:"type" json:"type"`
	// Low and High bound int and float ranges, both included.
	Low  float64 `yaml:"low,omitempty" json:"low,omitempty"`
	High float64 `yaml:"high,omitempty" json:"high,omitempty"`
	// Log samples the range on a log scale (Low must be > 0).
	Log bool `yaml:"log,omitempty" json:"log,omitempty"`
	// Choices are the values of a choice parameter, as flag values.
	Choices []string `yaml:"choices,omitempty" json:"choices,omitempty"`
	// Value is a pinned parameter's value.
	Value string `yaml:"value,omitempty" json:"value,omitempty"`
}

// Flag is the parameter's command-line flag.
func (p Param) Flag() string { return "--" + strings.ReplaceAll(p.Name, "_", "-") }

func (p Param) String() string {
	switch p.Kind {
	case KindInt, KindFloat:
		s := fmt.Sprintf("%s=%s:%g:%g", p.Name, p.Kind, p.Low, p.High)
		if p.Log {
			s += ":log"
		}
		return s
	case KindChoice:
		return p.Name + "=" + strings.Join(p.Choices, ",")
	case KindBool:
		return p.Name + "=bool"
	}
	return p.Name + "=" + p.Value
}

func (p Param) validate() error {
	if p.Name == "" || strings.ContainsAny(p.Name, " =-") {
		return fmt.Errorf("parameter %q: name it with vLLM's snake_case option name, e.g. max_num_seqs", p.Name)
	}
	switch p.Kind {
	case KindInt, KindFloat:
		if !(p.Low <= p.High) || math.IsInf(p.Low, 0) || math.IsInf(p.High, 0) {
			return fmt.Errorf("parameter %s: need finite low <= high, got %g..%g", p.Name, p.Low, p.High)
		}
		if p.Log && p.Low <= 0 {
			return fmt.Errorf("parameter %s: a log scale needs low > 0, got %g", p.Name, p.Low)
		}
		if p.Kind == KindInt && (p.Low != math.Trunc(p.Low) || p.High != math.Trunc(p.High)) {
			return fmt.Errorf("parameter %s: int bounds must be whole numbers, got %g..%g", p.Name, p.Low, p.High)
		}
	case KindChoice:
		if len(p.Choices) == 0 {
			return fmt.Errorf("parameter %s: give at least one choice", p.Name)
		}
	case KindBool:
	case KindPinned:
		if p.Value == "" {
			return fmt.Errorf("parameter %s: a pinned parameter needs a value", p.Name)
		}
	default:
		return fmt.Errorf("parameter %s: type %q is unknown; use int, float, choice, bool or a pinned value", p.Name, p.Kind)
	}
	return nil
}

// Condition ties parameters together: when If holds (or always, when If
// is empty), Then must hold. "enable_chunked_prefill == false ⇒
// max_num_batched_tokens >= max_model_len" is vLLM's rule that sinks half
// of a naive random search.
type Condition struct {
	If   string `yaml:"if,omitempty" json:"if,omitempty"`
	Then string `yaml:"then" json:"then"`
}

func (c Condition) String() string {
	if c.If == "" {
		return c.Then
	}
	return c.If + " => " + c.Then
}

// Space is the search space: sampled and pinned parameters plus
// conditions, in a fixed order (the order flags are passed).
type Space struct {
	Params     []Param     `json:"params"`
	Conditions []Condition `json:"conditions,omitempty"`
}

// Lookup returns the parameter called name.
func (s *Space) Lookup(name string) (Param, bool) {
	for _, p := range s.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// Set adds p, replacing a parameter of the same name.
func (s *Space) Set(p Param) {
	for i := range s.Params {
		if s.Params[i].Name == p.Name {
			s.Params[i] = p
			return
		}
	}
	s.Params = append(s.Params, p)
}

// Sampled are the parameters a sampler chooses.
func (s *Space) Sampled() []Param {
	var out []Param
	for _, p := range s.Params {
		if p.Kind != KindPinned {
			out = append(out, p)
		}
	}
	return out
}

// AllNumeric reports whether every sampled parameter is an int or float
// range or ascending numeric choices, which CMA-ES needs.
func (s *Space) AllNumeric() bool {
	for _, p := range s.Sampled() {
		if p.Kind != KindInt && p.Kind != KindFloat && !p.ordinal() {
			return false
		}
	}
	return true
}

// Validate checks every parameter and condition.
func (s *Space) Validate() error {
	seen := map[string]bool{}
	for _, p := range s.Params {
		if err := p.validate(); err != nil {
			return err
		}
		if seen[p.Name] {
			return fmt.Errorf("parameter %s is given twice", p.Name)
		}
		seen[p.Name] = true
	}
	if len(s.Sampled()) == 0 {
		return errors.New("the search space has no parameter to sample; add one, e.g. --param max_num_seqs=int:16:512:log")
	}
	for _, c := range s.Conditions {
		if _, err := parseCondition(c); err != nil {
			return err
		}
	}
	return nil
}

// ParseParam reads one --param flag:
//
//	max_num_seqs=int:16:512[:log]   integer range
//	scheduler_delay_factor=float:0:1 float range
//	block_size=8,16,32              choices
//	enable_chunked_prefill=bool     true or false
//	max_model_len=4096              pinned
func ParseParam(s string) (Param, error) {
	name, spec, ok := strings.Cut(s, "=")
	name = strings.ReplaceAll(strings.TrimLeft(strings.TrimSpace(name), "-"), "-", "_")
	if !ok || name == "" || spec == "" {
		return Param{}, fmt.Errorf("--param %q: write NAME=int:LOW:HIGH[:log], NAME=float:LOW:HIGH[:log], NAME=A,B,C, NAME=bool or NAME=VALUE", s)
	}
	p := Param{Name: name}
	fields := strings.Split(spec, ":")
	switch {
	case spec == "bool":
		p.Kind = KindBool
	case (fields[0] == "int" || fields[0] == "float") && (len(fields) == 3 || len(fields) == 4):
		p.Kind = Kind(fields[0])
		var err1, err2 error
		p.Low, err1 = strconv.ParseFloat(fields[1], 64)
		p.High, err2 = strconv.ParseFloat(fields[2], 64)
		if err1 != nil || err2 != nil {
			return Param{}, fmt.Errorf("--param %q: bounds %q and %q must be numbers", s, fields[1], fields[2])
		}
		if len(fields) == 4 {
			if fields[3] != "log" {
				return Param{}, fmt.Errorf("--param %q: the fourth field may only be \"log\"", s)
			}
			p.Log = true
		}
	case fields[0] == "int" || fields[0] == "float":
		return Param{}, fmt.Errorf("--param %q: a range is %s:LOW:HIGH[:log]", s, fields[0])
	case strings.Contains(spec, ","):
		p.Kind = KindChoice
		for _, c := range strings.Split(spec, ",") {
			p.Choices = append(p.Choices, strings.TrimSpace(c))
		}
	default:
		p.Kind, p.Value = KindPinned, spec
	}
	if err := p.validate(); err != nil {
		return Param{}, fmt.Errorf("--param %q: %w", s, err)
	}
	return p, nil
}

// SpaceFile is the YAML form of a search space.
type SpaceFile struct {
	Params     yaml.Node   `yaml:"params"`
	Conditions []Condition `yaml:"conditions"`
}

// ParseSpaceYAML reads a search space (see the tune command's help for an
// example). Parameters keep the file's order.
func ParseSpaceYAML(data []byte) (*Space, error) {
	var f SpaceFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	s := &Space{Conditions: f.Conditions}
	if f.Params.Kind != yaml.MappingNode {
		return nil, errors.New("params: give a mapping from option name to its range, e.g. max_num_seqs: {type: int, low: 16, high: 512, log: true}")
	}
	for i := 0; i+1 < len(f.Params.Content); i += 2 {
		name, body := f.Params.Content[i].Value, f.Params.Content[i+1]
		var p Param
		switch body.Kind {
		case yaml.ScalarNode: // max_model_len: 4096 pins the value
			p = Param{Kind: KindPinned, Value: body.Value}
		case yaml.SequenceNode: // block_size: [8, 16, 32]
			p.Kind = KindChoice
			if err := body.Decode(&p.Choices); err != nil {
				return nil, fmt.Errorf("params.%s: %w", name, err)
			}
		default:
			if err := decodeKnown(body, &p); err != nil {
				return nil, fmt.Errorf("params.%s: %w", name, err)
			}
			if p.Kind == "" {
				switch {
				case len(p.Choices) > 0:
					p.Kind = KindChoice
				case p.Value != "":
					p.Kind = KindPinned
				}
			}
		}
		p.Name = name
		s.Params = append(s.Params, p)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

func decodeKnown(n *yaml.Node, out *Param) error {
	var keys []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		keys = append(keys, n.Content[i].Value)
	}
	for _, k := range keys {
		if !slices.Contains([]string{"type", "low", "high", "log", "choices", "value"}, k) {
			return fmt.Errorf("unknown field %q; use type, low, high, log, choices or value", k)
		}
	}
	return n.Decode(out)
}

// LoadSpaceFile reads a YAML search space from path.
func LoadSpaceFile(path string) (*Space, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("search space: %w", err)
	}
	s, err := ParseSpaceYAML(data)
	if err != nil {
		return nil, fmt.Errorf("search space %s: %w", path, err)
	}
	return s, nil
}

// DefaultSpace is the search space for a release, centred on its
// defaults: the knobs vLLM's auto_tune and SCOOT search, limited to what
// the release accepts (V1 always chunks prefill and has no scheduler
// delay). largeGPU selects the defaults of GPUs with ≥ 70 GiB.
func DefaultSpace(p vllm.Profile, largeGPU bool) *Space {
	seqs := p.Defaults.MaxNumSeqs
	if largeGPU {
		seqs = p.Defaults.MaxNumSeqsLargeGPU
	}
	blocks := make([]string, len(p.BlockSizes))
	for i, b := range p.BlockSizes {
		blocks[i] = strconv.Itoa(b)
	}
	s := &Space{Params: []Param{
		{Name: "max_num_seqs", Kind: KindInt, Low: 8, High: float64(2 * seqs), Log: true},
		{Name: "max_num_batched_tokens", Kind: KindInt, Low: 256, High: 16384, Log: true},
		{Name: "block_size", Kind: KindChoice, Choices: blocks},
		{Name: "enable_prefix_caching", Kind: KindBool},
		{Name: "gpu_memory_utilization", Kind: KindFloat, Low: 0.80, High: 0.95},
	}}
	if p.Engine == engine.V0 {
		s.Params = append(s.Params,
			Param{Name: "enable_chunked_prefill", Kind: KindBool},
			Param{Name: "scheduler_delay_factor", Kind: KindFloat, Low: 0, High: 0.5})
		s.Conditions = append(s.Conditions, Condition{If: "enable_chunked_prefill == false", Then: "max_num_batched_tokens >= max_model_len"})
	}
	s.Conditions = append(s.Conditions, Condition{Then: "max_num_batched_tokens >= max_num_seqs"})
	return s
}
