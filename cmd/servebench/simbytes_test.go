package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/internal/golden"
)

// TestSimOutputBytes pins sim's printed result and its JSONL records, byte
// for byte, for a few workloads: memory and speed work on the simulator and
// the workload builder must not change a single output byte for a seed.
// The golden file holds SHA-256 digests (the records run to megabytes).
func TestSimOutputBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator on thousands of requests")
	}
	base := []string{"sim", "--model", "Llama-3.1-8B", "--gpu", "H100", "--random-input-len", "200", "--random-output-len", "200",
		"--max-num-seqs", "256", "--max-num-batched-tokens", "2048", "--seed", "5"}
	cases := []struct {
		name string
		args []string
	}{
		{"rate50", []string{"--num-prompts", "3000", "--request-rate", "50"}},
		{"burst-no-prefix-caching", []string{"--num-prompts", "2000", "--no-enable-prefix-caching"}},
		{"burst-shared-prefix", []string{"--num-prompts", "2000", "--random-prefix-len", "300", "--random-range-ratio", "0.5"}},
		{"v0-rate20", []string{"--num-prompts", "1000", "--request-rate", "20", "--engine", "v0"}},
	}
	var got strings.Builder
	for _, tc := range cases {
		records := filepath.Join(t.TempDir(), "records.jsonl")
		stdout, stderr, err := runCLI(t, append(append(append([]string{}, base...), tc.args...), "--records", records)...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, stderr)
		}
		rec, err := os.ReadFile(records)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec) == 0 || !strings.Contains(stdout, "Successful requests") {
			t.Fatalf("%s: no records or no result block:\n%s", tc.name, stdout)
		}
		so, rs := sha256.Sum256([]byte(stdout)), sha256.Sum256(rec)
		fmt.Fprintf(&got, "%s stdout %s records %s\n", tc.name, hex.EncodeToString(so[:]), hex.EncodeToString(rs[:]))
	}
	golden.CheckFile(t, filepath.Join("testdata", "sim_bytes.golden"), []byte(got.String()))
}
