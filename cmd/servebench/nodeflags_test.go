package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestServeMultiNodeStartup: serve takes the placement flags and logs the
// Ray cluster, the placement, the NCCL transport and the TCP warning.
func TestServeMultiNodeStartup(t *testing.T) {
	_, stderr, stop := startCommand(t, `Starting vLLM API server on (http://127\.0\.0\.1:\d+)`,
		"serve", "--model", "Qwen2-0.5B", "--gpu", "A10", "-tp", "2", "--nodes", "2", "--node-link", "socket-25g:latency=50us",
		"--port", "0", "--stats-interval", "0")
	logs := stderr.String()
	stop()
	for _, want := range []string{
		"Defaulting to use ray for distributed inference",
		"Connected to Ray cluster (modelled): 2 node(s), 2 GPUs",
		"node 1: ranks 1-1 (PP stage 0, TP ranks 1)",
		"via NET/Socket/0 (socket-25g*: 1.9 GB/s bus bandwidth, 50µs per message",
		"Tensor parallel group spans 2 nodes over NET/Socket/0",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, logs)
		}
	}
}

var meanTPOT = regexp.MustCompile(`Mean TPOT \(ms\):\s+([0-9.]+)`)

func simTPOT(t *testing.T, extra ...string) (float64, string) {
	t.Helper()
	args := append([]string{"sim", "--model", "Qwen2-7B", "--gpu", "A10", "-tp", "2", "--num-prompts", "20", "--max-concurrency", "10",
		"--random-input-len", "256", "--random-output-len", "64"}, extra...)
	out, stderr, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	m := meanTPOT.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no mean TPOT in:\n%s", out)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v, stderr
}

// TestSimCrossNodeTP: TP over TCP sockets between nodes costs far more
// than TP inside a node, and PP across the same network much less.
func TestSimCrossNodeTP(t *testing.T) {
	same, _ := simTPOT(t)
	cross, stderr := simTPOT(t, "--nodes", "2", "--node-link", "socket-25g")
	rdma, _ := simTPOT(t, "--nodes", "2", "--node-link", "roce-200g")
	if !strings.Contains(stderr, "WARNING Tensor parallel group spans 2 nodes") {
		t.Errorf("no cross-node TP warning:\n%s", stderr)
	}
	if cross < 1.4*same {
		t.Errorf("TP2 across nodes over sockets: TPOT %.2f ms, only %.2f× one node (%.2f ms)", cross, cross/same, same)
	}
	if !(rdma > same && rdma < cross) {
		t.Errorf("TP2 over RoCE: TPOT %.2f ms, want between one node %.2f and sockets %.2f", rdma, same, cross)
	}
}

func TestNodeFlagErrors(t *testing.T) {
	base := []string{"sim", "--model", "Qwen2-7B", "--gpu", "A10", "--num-prompts", "2"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-tp", "2", "--nodes", "0"}, "--nodes 0: give at least 1 machine"},
		{[]string{"-tp", "2", "--node-link", "roce-200g"}, "--node-link roce-200g needs --nodes 2 or more"},
		{[]string{"-tp", "2", "--nodes", "2", "--node-link", "carrier-pigeon"}, `--node-link "carrier-pigeon": perf: unknown link`},
		{[]string{"-tp", "2", "--nodes", "2", "--node-link", "roce-200g:bw=fast"}, `--node-link "roce-200g:bw=fast": bandwidth`},
		{[]string{"-tp", "2", "--link", "pcie:algo=star"}, `--link "pcie:algo=star": algo "star"`},
		{[]string{"-tp", "2", "--nodes", "3"}, "--nodes 3 does not divide the world size 2"},
		{[]string{"-tp", "2", "--distributed-executor-backend", "uni"}, "--distributed-executor-backend: distributed_executor_backend 'uni' runs a single GPU"},
		{[]string{"-pp", "2", "--nodes", "2", "--distributed-executor-backend", "mp"}, "'mp' cannot span 2 nodes"},
	}
	for _, c := range cases {
		_, _, err := runCLI(t, append(append([]string{}, base...), c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.args, err, c.want)
		}
	}
}
