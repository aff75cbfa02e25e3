package validate

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// checkKeys walks a decoded YAML mapping against the struct it will be
// decoded into and names the first key the struct does not have, with its
// line: a misspelt key must not be dropped silently. Nested structs and
// lists of structs are checked too; maps accept any key.
func checkKeys(n *yaml.Node, into any, prefix string) error {
	return checkKeysType(n, reflect.TypeOf(into), prefix)
}

func checkKeysType(n *yaml.Node, t reflect.Type, prefix string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("field %s (line %d): expected a mapping of keys", strings.TrimSuffix(prefix, "."), n.Line)
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			f, ok := fields[key.Value]
			if !ok {
				return fmt.Errorf("field %s%s (line %d): unknown key; corpus/README.md lists the schema", prefix, key.Value, key.Line)
			}
			if err := checkKeysType(val, f.Type, prefix+key.Value+"."); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return nil // the decoder names the type error
		}
		for i, item := range n.Content {
			if err := checkKeysType(item, t.Elem(), fmt.Sprintf("%s%d.", prefix, i+1)); err != nil {
				return err
			}
		}
	}
	return nil
}

// yamlFields maps a struct's YAML keys to its fields ("-" skipped).
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f
	}
	return out
}

// mapValue is the value of key in a mapping node, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// requireKeys names the first required key missing from a mapping.
func requireKeys(n *yaml.Node, keys []string, prefix string) error {
	for _, k := range keys {
		v := mapValue(n, k)
		if v == nil || (v.Kind == yaml.ScalarNode && v.Tag == "!!null") {
			return fmt.Errorf("field %s%s: missing (required)", prefix, k)
		}
	}
	return nil
}

// oneLine folds a multi-line error (the YAML decoder's) into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
