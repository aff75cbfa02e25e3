package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/internal/golden"
	"github.com/servebench/servebench/report"
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
	const (
		poem     = "../../workload/testdata/poem.txt"
		shareGPT = "../../workload/testdata/sharegpt_small.json"
		custom   = "../../workload/testdata/custom_small.jsonl"
	)
	cases := []struct {
		name string
		args []string
	}{
		{"rate50", []string{"--num-prompts", "3000", "--request-rate", "50"}},
		{"burst-no-prefix-caching", []string{"--num-prompts", "2000", "--no-enable-prefix-caching"}},
		{"burst-shared-prefix", []string{"--num-prompts", "2000", "--random-prefix-len", "300", "--random-range-ratio", "0.5"}},
		{"v0-rate20", []string{"--num-prompts", "1000", "--request-rate", "20", "--engine", "v0"}},
		// Fleets, shards and tokenized prompts: the modes that built every
		// request up front before they were streamed.
		{"colocated4-rr", []string{"--num-prompts", "2000", "--request-rate", "50", "--topology", "colocated", "--replicas", "4"}},
		{"colocated3-prefix-aware", []string{"--num-prompts", "1500", "--request-rate", "40", "--topology", "colocated", "--replicas", "3",
			"--router", "prefix-aware", "--random-prefix-len", "300", "--random-range-ratio", "0.5"}},
		{"colocated2-least-loaded-burst-no-caching", []string{"--num-prompts", "1000", "--topology", "colocated", "--replicas", "2",
			"--router", "least-loaded", "--no-enable-prefix-caching"}},
		{"pd2x2-random-router", []string{"--num-prompts", "1000", "--request-rate", "20", "--topology", "pd", "--prefill-instances", "2",
			"--decode-instances", "2", "--router", "random", "--random-range-ratio", "0.3"}},
		{"shard1of4", []string{"--num-prompts", "2000", "--request-rate", "50", "--shard", "1/4"}},
		{"shard2of3-burst-shared-prefix", []string{"--num-prompts", "900", "--random-prefix-len", "100", "--shard", "2/3"}},
		{"shard0of3-colocated2", []string{"--num-prompts", "900", "--request-rate", "30", "--shard", "0/3", "--topology", "colocated", "--replicas", "2"}},
		{"tokenizer-rate20", []string{"--num-prompts", "300", "--request-rate", "20", "--tokenizer", "cl100k_base", "--random-range-ratio", "0.5"}},
		{"tokenizer-burst-no-prefix-caching", []string{"--num-prompts", "300", "--tokenizer", "cl100k_base", "--no-enable-prefix-caching"}},
		{"tokenizer-shard1of2-shared-prefix", []string{"--num-prompts", "300", "--request-rate", "20", "--tokenizer", "cl100k_base",
			"--random-prefix-len", "50", "--shard", "1/2"}},
		{"tokenizer-shard0of2-no-prefix-caching", []string{"--num-prompts", "200", "--request-rate", "20", "--tokenizer", "cl100k_base",
			"--shard", "0/2", "--no-enable-prefix-caching"}},
		{"sonnet-rate20", []string{"--num-prompts", "400", "--request-rate", "20", "--dataset-name", "sonnet", "--dataset-path", poem,
			"--sonnet-input-len", "200", "--sonnet-prefix-len", "80"}},
		{"sonnet-shard1of3-no-prefix-caching", []string{"--num-prompts", "300", "--request-rate", "20", "--dataset-name", "sonnet", "--dataset-path", poem,
			"--sonnet-input-len", "150", "--sonnet-prefix-len", "0", "--shard", "1/3", "--no-enable-prefix-caching"}},
		{"sharegpt-oversampled-colocated2-prefix-aware", []string{"--num-prompts", "600", "--request-rate", "30", "--dataset-name", "sharegpt",
			"--dataset-path", shareGPT, "--topology", "colocated", "--replicas", "2", "--router", "prefix-aware"}},
		{"sharegpt-no-oversample-shard0of2", []string{"--num-prompts", "600", "--dataset-name", "sharegpt", "--dataset-path", shareGPT,
			"--no-oversample", "--shard", "0/2"}},
		{"custom-oversampled-burst", []string{"--num-prompts", "500", "--dataset-name", "custom", "--dataset-path", custom}},
		{"custom-shard2of3-pd", []string{"--num-prompts", "300", "--request-rate", "20", "--dataset-name", "custom", "--dataset-path", custom,
			"--shard", "2/3", "--topology", "pd"}},
		{"tokenizer-colocated2-prefix-aware", []string{"--num-prompts", "300", "--request-rate", "20", "--tokenizer", "cl100k_base",
			"--random-prefix-len", "50", "--topology", "colocated", "--replicas", "2", "--router", "prefix-aware"}},
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
		fmt.Fprintf(&got, "%s stdout %s records %s", tc.name, hex.EncodeToString(so[:]), hex.EncodeToString(rs[:]))
		if slices.Contains(tc.args, "--shard") {
			fmt.Fprintf(&got, " %s", shardManifestFigures(t, records))
		}
		got.WriteString("\n")
	}
	golden.CheckFile(t, filepath.Join("testdata", "sim_bytes.golden"), []byte(got.String()))
}

// shardManifestFigures is what a simulated shard's manifest says about the
// schedule (the rest is the host and the date).
func shardManifestFigures(t *testing.T, records string) string {
	t.Helper()
	m := readJSONObject(t, report.ShardManifestPath(records))
	return fmt.Sprintf("schedule %v total %v shard %v duration %v", m["schedule_hash"], m["total_requests"], m["shard_requests"], m["duration_ns"])
}
