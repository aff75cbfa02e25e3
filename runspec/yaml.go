package runspec

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// YAML writes the spec as a YAML document: its kind, then per section
// the flags Args would write, by flag name. reveal writes secrets as
// they are (for a file only the run reads); without it they are masked.
//
//	kind: bench
//	target:
//	  base-url: http://10.0.0.7:8000
//	workload:
//	  num-prompts: 200
//	  goodput: [ttft:500, tpot:50]
func (s *Spec) YAML(reveal bool) ([]byte, error) {
	changed := s.changedFunc()
	_, sets := s.bound()
	doc := &yaml.Node{Kind: yaml.MappingNode}
	doc.Content = append(doc.Content, scalar("kind", "!!str"), scalar(string(s.Kind), "!!str"))
	for _, fs := range sets {
		sec := &yaml.Node{Kind: yaml.MappingNode}
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Hidden || !changed(f.Name) {
				return
			}
			sec.Content = append(sec.Content, scalar(f.Name, "!!str"), flagNode(f, reveal))
		})
		if len(sec.Content) > 0 {
			doc.Content = append(doc.Content, scalar(fs.Name(), "!!str"), sec)
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("run spec YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("run spec YAML: %w", err)
	}
	return buf.Bytes(), nil
}

func scalar(v, tag string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v} }

// flagNode is a flag's value as YAML: a list for repeatable flags, else a
// scalar typed by the flag (a number stays a number).
func flagNode(f *pflag.Flag, reveal bool) *yaml.Node {
	values := flagValues(f, reveal)
	if _, list := f.Value.(pflag.SliceValue); list || isRepeatable(f) {
		seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, v := range values {
			seq.Content = append(seq.Content, scalar(v, "!!str"))
		}
		return seq
	}
	v := values[0]
	switch f.Value.Type() {
	case "bool":
		return scalar(v, "!!bool")
	case "int", "int64":
		return scalar(v, "!!int")
	case "float64", "float":
		if _, err := strconv.ParseInt(v, 10, 64); err == nil {
			return scalar(v, "!!int") // 2000, not !!float 2000
		}
		if !strings.ContainsAny(v, "infIN") { // inf and nan are no YAML numbers
			return scalar(v, "!!float")
		}
	}
	return scalar(v, "!!str")
}

func isRepeatable(f *pflag.Flag) bool {
	switch f.Value.(type) {
	case *headersValue, *metadataValue, *namesValue:
		return true
	}
	return false
}

// ParseYAML reads a spec written by YAML (or by hand in its form). Every
// section and flag must be one the kind takes; values go through the
// flags' own parsing, so they mean what they mean on a command line.
func ParseYAML(data []byte) (*Spec, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("run spec YAML: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("run spec YAML: want a mapping with kind and sections, e.g. kind: bench")
	}
	top := doc.Content[0]
	var kind Kind
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "kind" {
			kind = Kind(top.Content[i+1].Value)
		}
	}
	switch kind {
	case Bench, Sim, Serve:
	default:
		return nil, fmt.Errorf("run spec YAML: kind %q: use bench, sim or serve", kind)
	}
	c, sets := New(kind).bound()
	byName := map[string]*pflag.FlagSet{}
	var names []string
	for _, fs := range sets {
		byName[fs.Name()] = fs
		names = append(names, fs.Name())
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		key, val := top.Content[i].Value, top.Content[i+1]
		if key == "kind" {
			continue
		}
		fs := byName[key]
		if fs == nil {
			return nil, fmt.Errorf("run spec YAML line %d: %s has no section %q; its sections are %s", top.Content[i].Line, kind, key, strings.Join(names, ", "))
		}
		if val.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("run spec YAML line %d: section %s must map flag names to values", val.Line, key)
		}
		if err := setSection(c, fs, val); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func setSection(c *Spec, fs *pflag.FlagSet, sec *yaml.Node) error {
	for i := 0; i+1 < len(sec.Content); i += 2 {
		name, val := sec.Content[i].Value, sec.Content[i+1]
		f := fs.Lookup(name)
		if f == nil {
			var known []string
			fs.VisitAll(func(f *pflag.Flag) {
				if !f.Hidden {
					known = append(known, f.Name)
				}
			})
			return fmt.Errorf("run spec YAML line %d: %v", sec.Content[i].Line, unknownFlag(c.Kind, name+" in section "+fs.Name(), known))
		}
		var items []string
		switch val.Kind {
		case yaml.ScalarNode:
			items = []string{yamlScalar(val.Value)}
		case yaml.SequenceNode:
			for _, item := range val.Content {
				if item.Kind != yaml.ScalarNode {
					return fmt.Errorf("run spec YAML line %d: --%s takes a list of plain values", item.Line, name)
				}
				items = append(items, item.Value)
			}
		default:
			return fmt.Errorf("run spec YAML line %d: --%s takes a value or a list", val.Line, name)
		}
		for _, item := range items {
			if err := fs.Set(name, item); err != nil {
				return fmt.Errorf("run spec YAML line %d: --%s %q: %w", val.Line, name, item, unwrapSetError(err))
			}
		}
		c.markSet(name)
	}
	return nil
}

// yamlScalar maps YAML's spellings of infinity and NaN to Go's.
func yamlScalar(v string) string {
	switch strings.ToLower(v) {
	case ".inf", "+.inf":
		return "+Inf"
	case "-.inf":
		return "-Inf"
	case ".nan":
		return "NaN"
	}
	return v
}
