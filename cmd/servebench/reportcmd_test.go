package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportReadsSweepDirectories(t *testing.T) {
	root := t.TempDir()
	for _, setup := range []string{"baseline", "chunked"} {
		b := &fakeBench{}
		if _, _, err := executeForTest(t, newSweepCmdWith(b.factory), t.Context(),
			"--dir", filepath.Join(root, setup), "--label", setup, "--", "--request-rate", "2,8,16"); err != nil {
			t.Fatal(err)
		}
	}
	stdout, _, err := executeForTest(t, newReportCmd(), t.Context(), root, "--group-by", "request_rate", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatalf("JSON: %v\n%s", err, stdout)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r["label"].(string))
	}
	want := "baseline: request-rate=2,chunked: request-rate=2,baseline: request-rate=8,chunked: request-rate=8,baseline: request-rate=16,chunked: request-rate=16"
	if strings.Join(got, ",") != want {
		t.Errorf("rows:\n got %s\nwant %s", strings.Join(got, ","), want)
	}
}

func TestReportRejectsEmptyOrMissingDirectories(t *testing.T) {
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "package.json"), []byte(`{"name": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := executeForTest(t, newReportCmd(), t.Context(), empty); err == nil || !strings.Contains(err.Error(), "no benchmark results") {
		t.Errorf("empty dir: %v", err)
	}
	if _, _, err := executeForTest(t, newReportCmd(), t.Context(), filepath.Join(empty, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing dir: %v", err)
	}
}
