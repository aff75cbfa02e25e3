package perf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// decodeYAMLDocument decodes data, which must hold exactly one YAML (or
// JSON) document with no unknown fields, into dst. The error is a phrase
// for the caller to prefix with what the file is; expected lists the keys
// an empty file should have held.
func decodeYAMLDocument(data []byte, dst any, expected string) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(dst); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("empty; expected %s", expected)
		}
		return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return errors.New("holds more than one YAML document; describe one per file")
	}
	return nil
}
