package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/servebench/servebench/internal/option"
)

// ManifestKind marks a sweep manifest; package report looks for it.
const ManifestKind = "servebench-sweep"

// ManifestName is the manifest's file name inside a run directory.
const ManifestName = "manifest.json"

// Manifest records a sweep: how it was asked for, and every point's status
// and result. It is rewritten after every point so an interrupted sweep can
// resume.
type Manifest struct {
	Kind     string   `json:"kind"`
	Version  int      `json:"version"`
	Label    string   `json:"label,omitempty"`
	Target   string   `json:"target,omitempty"`
	BaseArgs []string `json:"base_args"`
	Axes     []Axis   `json:"axes"`
	Repeat   int      `json:"repeat"`
	Created  string   `json:"created"` // RFC 3339
	Updated  string   `json:"updated"` // RFC 3339
	Points   []Point  `json:"points"`
	// Search holds the settings and outcome of an SLA search.
	Search *SearchResult `json:"sla_search,omitempty"`
}

// ReadManifest loads dir/manifest.json; a missing manifest is reported
// with fs.ErrNotExist.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestName)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading sweep manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s is not a readable sweep manifest: %w; move it away to start over", path, err)
	}
	if m.Kind != ManifestKind {
		return nil, option.Errorf("%s is not a servebench sweep manifest (kind %q); choose another {dir}", path, m.Kind)
	}
	return &m, nil
}

func manifestExists(dir string) (bool, error) {
	_, err := os.Stat(filepath.Join(dir, ManifestName))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("checking for a sweep manifest: %w", err)
}

// write replaces the manifest atomically, so a crash never leaves half a
// file behind.
func (m *Manifest) write(dir string) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding sweep manifest: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".manifest-*.json")
	if err != nil {
		return fmt.Errorf("writing sweep manifest: %w", err)
	}
	_, werr := tmp.Write(append(data, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing sweep manifest: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, ManifestName)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing sweep manifest: %w", err)
	}
	return nil
}

// sameSweep explains how a manifest differs from what is asked now, or
// returns "" when resuming it is safe.
func (m *Manifest) sameSweep(base []string, axes []Axis, repeat int) string {
	switch {
	case !slices.Equal(m.BaseArgs, base):
		return fmt.Sprintf("its fixed flags were %q, now %q", m.BaseArgs, base)
	case !slices.EqualFunc(m.Axes, axes, func(a, b Axis) bool { return a.Flag == b.Flag && slices.Equal(a.Values, b.Values) }):
		return fmt.Sprintf("its axes were %v, now %v", m.Axes, axes)
	case m.Repeat != max(repeat, 1):
		return fmt.Sprintf("it repeated each point %d times, now %d", m.Repeat, max(repeat, 1))
	}
	return ""
}
