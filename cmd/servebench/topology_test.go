package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var topologyBase = []string{"sim", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "H100", "--num-prompts", "120",
	"--request-rate", "8", "--seed", "3", "--random-input-len", "512", "--random-output-len", "32"}

func TestSimTopologyIsDeterministic(t *testing.T) {
	for _, topo := range [][]string{
		{"--topology", "colocated", "--replicas", "3", "--router", "random"},
		{"--topology", "pd", "--prefill-instances", "2", "--decode-instances", "1", "--router", "least-loaded", "--kv-link", "tcp"},
	} {
		args := append(append([]string{}, topologyBase...), topo...)
		a, _, err := runCLI(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := runCLI(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Fatalf("%v: same seed, different output:\n%s\n---\n%s", topo, a, b)
		}
		if !strings.Contains(a, "Simulated Topology") || !strings.Contains(a, "GPUs:") {
			t.Fatalf("%v: no topology section:\n%s", topo, a)
		}
	}
}

func TestSimTopologyRoleFlagsAndGPUs(t *testing.T) {
	dir := t.TempDir()
	args := append(append([]string{}, topologyBase...), "--topology", "pd", "--prefill-instances", "2", "--decode-instances", "1",
		"--decode-tp", "2", "--decode-max-num-seqs", "64", "--prefill-max-num-batched-tokens", "4096",
		"--save-result", "--result-dir", dir, "--result-filename", "pd.json")
	out, _, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "2P1D") || !strings.Contains(out, "4 GPUs") {
		t.Errorf("topology line lacks 2P1D or 4 GPUs:\n%s", out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "pd.json"))
	if err != nil {
		t.Fatal(err)
	}
	var saved map[string]json.RawMessage
	if err := json.Unmarshal(raw, &saved); err != nil {
		t.Fatal(err)
	}
	var topo map[string]any
	if err := json.Unmarshal(saved["fleet"], &topo); err != nil {
		t.Fatal(err)
	}
	// The metadata keys let compare and sweep group by topology and GPUs.
	if string(saved["topology"]) != `"2P1D-rdma"` || string(saved["gpus"]) != `"4"` {
		t.Errorf("metadata topology %s, gpus %s", saved["topology"], saved["gpus"])
	}
	decode := topo["decode"].(map[string]any)
	prefill := topo["prefill"].(map[string]any)
	kv := topo["kv_transfer"].(map[string]any)
	if topo["gpus"] != 4.0 || decode["max_num_seqs"] != 64.0 || decode["gpus_per_instance"] != 2.0 ||
		prefill["max_num_batched_tokens"] != 4096.0 || kv["ranks"] != 1.0 || kv["bytes_sent"] != kv["bytes_received"] {
		t.Errorf("saved fleet: %s", saved["fleet"])
	}
}

func TestSimTopologyFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--topology", "mesh"}, "--topology"},
		{[]string{"--topology", "colocated", "--router", "fastest"}, "--router"},
		{[]string{"--topology", "pd", "--replicas", "2"}, "--replicas"},
		{[]string{"--topology", "colocated", "--prefill-instances", "2"}, "--prefill-instances"},
		{[]string{"--topology", "colocated", "--replicas", "0"}, "--replicas"},
		{[]string{"--topology", "pd", "--kv-link", "pigeon"}, "--kv-link"},
		{[]string{"--topology", "pd", "--kv-link-bandwidth", "0"}, "--kv-link-bandwidth"},
		{[]string{"--topology", "pd", "--pd-handoff", "psychic"}, "--pd-handoff"},
		{[]string{"--topology", "pd", "--kv-buffer-overflow", "drop"}, "--kv-buffer-overflow"},
		{[]string{"--topology", "pd", "--decode-instances", "0"}, "--decode-instances"},
		{[]string{"--topology", "pd", "--decode-gpu-memory-utilization", "1.5"}, "decode instances: --decode-gpu-memory-utilization 1.5"},
		{[]string{"--topology", "pd", "--prefill-max-num-seqs", "-3"}, "--max-num-seqs (-3)"},
	} {
		_, _, err := runCLI(t, append(append([]string{}, topologyBase...), tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line naming %s", tt.args, err, tt.want)
		}
	}
}

// --log-stats on a fleet prints one stats line per instance and interval.
func TestSimTopologyLogStats(t *testing.T) {
	_, stderr, err := runCLI(t, append(append([]string{}, topologyBase...), "--topology", "pd", "--decode-instances", "2", "--log-stats", "--stats-interval", "1s")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, inst := range []string{"[prefill 0] ", "[decode 0] ", "[decode 1] "} {
		if !strings.Contains(stderr, inst+"Engine 000: Avg prompt throughput") && !strings.Contains(stderr, inst+"Avg prompt throughput") {
			t.Errorf("no stats line for %s in:\n%s", inst, stderr)
		}
	}
}
