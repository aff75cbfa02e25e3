package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/vllm"
	"github.com/spf13/pflag"
)

// nodeFlags place a multi-GPU deployment on machines: how many nodes, the
// network between them, and the executor that drives the workers.
type nodeFlags struct {
	nodes    int
	nodeLink string
	executor string
}

func (f *nodeFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.nodes, "nodes", 1, "machines the tensor×pipeline-parallel ranks run on, filled as vLLM/Ray do: TP ranks contiguous, so TP stays inside a node when it fits and PP stages go across nodes; only cross-node traffic pays --node-link")
	fs.StringVar(&f.nodeLink, "node-link", "", "network between nodes for NCCL: a preset ("+strings.Join(perf.Links(), ", ")+") optionally followed by :key=value overrides (bandwidth=200Gb/s, latency=40us, algo=auto|ring|tree, nics=N); default "+perf.DefaultNodeLink+" (NET/Socket) when --nodes > 1")
	fs.StringVar(&f.executor, "distributed-executor-backend", "", "how vLLM drives its GPU workers: ray, mp or uni (default as vLLM: uni for one GPU, ray across nodes, else mp); Ray adds per-step host cost")
}

// apply puts the placement flags into vLLM's options.
func (f *nodeFlags) apply(fs *pflag.FlagSet, o *vllm.Options) error {
	if f.nodes < 1 {
		return fmt.Errorf("--nodes %d: give at least 1 machine", f.nodes)
	}
	o.Nodes = f.nodes
	o.DistributedExecutorBackend = f.executor
	if f.nodeLink != "" {
		if f.nodes <= 1 && fs.Changed("node-link") {
			return fmt.Errorf("--node-link %s needs --nodes 2 or more; within one node, --link sets the GPU interconnect", f.nodeLink)
		}
		l, err := perf.ParseLink(f.nodeLink, "node_link")
		if err != nil {
			return err
		}
		o.NodeLink = l
	}
	return nil
}

// logDistributedLines writes the executor, placement and NCCL transport
// lines vLLM prints at startup, warnings at warning level.
func logDistributedLines(logger *slog.Logger, r *vllm.Resolved) {
	for _, l := range vllm.DistributedLines(r) {
		if l.Warning {
			logger.Warn(l.Text)
		} else {
			logger.Info(l.Text)
		}
	}
}

// distributedText is the same lines as sim prints them, warnings marked.
func distributedText(r *vllm.Resolved) []string {
	var out []string
	for _, l := range vllm.DistributedLines(r) {
		if l.Warning {
			out = append(out, "WARNING "+l.Text)
		} else {
			out = append(out, l.Text)
		}
	}
	return out
}
