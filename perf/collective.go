package perf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/option"
)

// Algorithm is the NCCL collective algorithm for all-reduce.
type Algorithm string

const (
	// AlgoAuto picks the cheaper of ring and tree for each message size,
	// as NCCL's tuner does from its own latency/bandwidth tables.
	AlgoAuto Algorithm = ""
	// AlgoRing: 2(n−1) steps, each moving 1/n of the data; the best
	// bandwidth, but latency grows with the rank count.
	AlgoRing Algorithm = "ring"
	// AlgoTree: a chain inside each node and a binary tree between nodes
	// (NCCL's double binary tree); latency grows with log2(nodes), but
	// every rank moves the whole message up and down.
	AlgoTree Algorithm = "tree"
)

// Collective is one NCCL communicator: Ranks GPUs spread evenly over
// Nodes machines. Traffic between GPUs of one node crosses Intra; traffic
// between nodes crosses Inter (ignored when Nodes ≤ 1).
type Collective struct {
	Ranks, Nodes int
	Intra, Inter Link
}

// multiNode reports whether the communicator spans machines.
func (c Collective) multiNode() bool { return c.Nodes > 1 && c.Ranks > 1 }

func (c Collective) perNode() int {
	if !c.multiNode() {
		return c.Ranks
	}
	return max(c.Ranks/c.Nodes, 1)
}

// ringLink is the link a ring across the communicator is bound by: each
// ring step waits for its slowest hop, so the latency is the larger of the
// two and the bandwidth the smaller. Between nodes, NCCL spreads channels
// over the node's NICs, so the network carries NICs × the per-NIC rate.
func (c Collective) ringLink() (latency, bandwidth float64) {
	if !c.multiNode() {
		return c.Intra.Latency.Seconds(), c.Intra.Bandwidth
	}
	return math.Max(c.Intra.Latency.Seconds(), c.Inter.Latency.Seconds()),
		math.Min(c.Intra.Bandwidth, c.Inter.Bandwidth*float64(c.nics()))
}

// nics is how many NICs per node carry the communicator's inter-node
// channels: the link's NICs, or one per GPU (rail-optimised) when unset,
// never more than the node's ranks.
func (c Collective) nics() int {
	n := c.perNode()
	if c.Inter.NICs > 0 {
		n = min(n, c.Inter.NICs)
	}
	return max(n, 1)
}

func (c Collective) algorithm() Algorithm {
	if c.multiNode() {
		return c.Inter.Algorithm
	}
	return c.Intra.Algorithm
}

// ringAllReduce is 2(n−1) messages; each rank sends 2(n−1)/n of the data.
func (c Collective) ringAllReduce(bytes float64) float64 {
	latency, bandwidth := c.ringLink()
	steps := float64(2 * (c.Ranks - 1))
	return steps*latency + steps/float64(c.Ranks)*bytes/bandwidth
}

// treeAllReduce: reduce up a chain inside each node and a binary tree
// between nodes, then broadcast back down; every rank moves the whole
// message twice.
func (c Collective) treeAllReduce(bytes float64) float64 {
	per := c.perNode()
	hops := float64(per-1) * c.Intra.Latency.Seconds()
	bandwidth := c.Intra.Bandwidth
	if c.multiNode() {
		hops += math.Ceil(math.Log2(float64(c.Nodes))) * c.Inter.Latency.Seconds()
		bandwidth = math.Min(bandwidth, c.Inter.Bandwidth*float64(c.nics()))
	}
	return 2*hops + 2*bytes/bandwidth
}

// allReduceSeconds is an all-reduce of bytes and the algorithm that ran.
func (c Collective) allReduceSeconds(bytes float64) (float64, Algorithm) {
	if c.Ranks <= 1 {
		return 0, AlgoAuto
	}
	switch c.algorithm() {
	case AlgoRing:
		return c.ringAllReduce(bytes), AlgoRing
	case AlgoTree:
		return c.treeAllReduce(bytes), AlgoTree
	}
	ring, tree := c.ringAllReduce(bytes), c.treeAllReduce(bytes)
	if tree < ring {
		return tree, AlgoTree
	}
	return ring, AlgoRing
}

// AllReduce is the time of one all-reduce of a bytes-long buffer, and the
// algorithm chosen for it.
func (c Collective) AllReduce(bytes float64) (time.Duration, Algorithm) {
	s, algo := c.allReduceSeconds(bytes)
	return toDuration(s), algo
}

// allGatherSeconds is a ring all-gather whose output is bytes long: n−1
// messages, each rank receiving (n−1)/n of the output. A gather to one
// rank (vLLM's logits gather) costs the same on a ring.
func (c Collective) allGatherSeconds(bytes float64) float64 {
	if c.Ranks <= 1 {
		return 0
	}
	latency, bandwidth := c.ringLink()
	steps := float64(c.Ranks - 1)
	return steps*latency + steps/float64(c.Ranks)*bytes/bandwidth
}

// AllGather is the time of one ring all-gather with a bytes-long output.
func (c Collective) AllGather(bytes float64) time.Duration {
	return toDuration(c.allGatherSeconds(bytes))
}

// SendRecv is one point-to-point message of bytes over l (a pipeline
// stage boundary).
func (l Link) SendRecv(bytes float64) time.Duration {
	return toDuration(l.Latency.Seconds() + bytes/l.Bandwidth)
}

// Placement maps a deployment's ranks to nodes as vLLM does with Ray's
// placement group or --nnodes: global rank = PP stage · TP + TP rank, and
// each node holds a contiguous block of GPUsPerNode ranks, so TP ranks
// share a node whenever TP fits in one and PP stages go across nodes.
type Placement struct {
	Nodes, GPUsPerNode int
	TensorParallel     int
	PipelineParallel   int
}

// Placement is the deployment's rank layout (Nodes ≤ 1: one node).
func (d Deployment) Placement() Placement {
	t, p := max(d.TensorParallel, 1), max(d.PipelineParallel, 1)
	nodes := max(d.Nodes, 1)
	return Placement{Nodes: nodes, GPUsPerNode: t * p / nodes, TensorParallel: t, PipelineParallel: p}
}

// NodeOf is the node rank r runs on.
func (p Placement) NodeOf(rank int) int { return rank / max(p.GPUsPerNode, 1) }

// TPNodes is how many nodes one TP group spans.
func (p Placement) TPNodes() int {
	if p.TensorParallel <= p.GPUsPerNode {
		return 1
	}
	return p.TensorParallel / p.GPUsPerNode
}

// CrossNodeBoundary reports whether the send from PP stage s to s+1
// leaves its node.
func (p Placement) CrossNodeBoundary(s int) bool {
	return p.NodeOf(s*p.TensorParallel) != p.NodeOf((s+1)*p.TensorParallel)
}

// TPCollective is the communicator of one TP group under d's placement.
func (d Deployment) TPCollective() Collective {
	p := d.Placement()
	if d.Nodes <= 1 {
		return Collective{Ranks: p.TensorParallel, Nodes: 1, Intra: d.Link}
	}
	return Collective{Ranks: p.TensorParallel, Nodes: p.TPNodes(), Intra: d.Link, Inter: d.NodeLink}
}

// StageLink is the link the send from PP stage s to s+1 crosses.
func (d Deployment) StageLink(s int) Link {
	if d.Nodes > 1 && d.Placement().CrossNodeBoundary(s) {
		return d.NodeLink
	}
	return d.Link
}

// checkPlacement validates Nodes against the world size.
func (d Deployment) checkPlacement() error {
	if d.Nodes <= 1 {
		return nil
	}
	p := d.Placement()
	world := p.TensorParallel * p.PipelineParallel
	if world%d.Nodes != 0 || world < d.Nodes {
		return option.Errorf("perf: {nodes} %d does not divide the world size %d (tensor_parallel_size %d × pipeline_parallel_size %d); vLLM places the same number of GPUs on every node",
			d.Nodes, world, p.TensorParallel, p.PipelineParallel)
	}
	if p.GPUsPerNode%p.TensorParallel != 0 && p.TensorParallel%p.GPUsPerNode != 0 {
		return option.Errorf("perf: {nodes} %d puts %d GPUs on each node, which splits tensor-parallel groups of %d unevenly; choose a node count whose GPUs per node divide or are a multiple of the TP size",
			d.Nodes, p.GPUsPerNode, p.TensorParallel)
	}
	return nil
}

// ParseLink reads a link preset with optional overrides:
// "name[:key=value,...]" with keys bandwidth (bus bandwidth per GPU or
// NIC: 25GB/s, 200Gb/s or bytes/s), latency (a Go duration per message),
// algo (auto, ring, tree) and nics (NICs per node carrying the traffic).
// flag names the option in errors (link or node_link).
func ParseLink(spec, flag string) (Link, error) {
	name, overrides, _ := strings.Cut(spec, ":")
	l, err := LookupLink(name)
	if err != nil {
		return Link{}, option.Errorf("{"+flag+"} %q: %w", spec, err)
	}
	if strings.TrimSpace(overrides) == "" {
		return l, nil
	}
	for _, kv := range strings.Split(overrides, ",") {
		key, value, ok := strings.Cut(kv, "=")
		key, value = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(value)
		if !ok || value == "" {
			return Link{}, option.Errorf("{"+flag+"} %q: %q is not key=value; keys: bandwidth, latency, algo, nics", spec, kv)
		}
		switch key {
		case "bandwidth", "bw":
			bw, err := parseBandwidth(value)
			if err != nil {
				return Link{}, option.Errorf("{"+flag+"} %q: bandwidth: %w", spec, err)
			}
			l.Bandwidth = bw
		case "latency", "lat":
			d, err := time.ParseDuration(strings.ReplaceAll(value, "µs", "us"))
			if err != nil || d < 0 {
				return Link{}, option.Errorf("{"+flag+"} %q: latency %q: give a non-negative duration such as 40us", spec, value)
			}
			l.Latency = d
		case "algo", "algorithm":
			switch a := Algorithm(strings.ToLower(value)); a {
			case AlgoRing, AlgoTree:
				l.Algorithm = a
			case "auto":
				l.Algorithm = AlgoAuto
			default:
				return Link{}, option.Errorf("{"+flag+"} %q: algo %q: use auto, ring or tree", spec, value)
			}
		case "nics":
			n, err := strconv.Atoi(value)
			if err != nil || n < 1 {
				return Link{}, option.Errorf("{"+flag+"} %q: nics %q: give a whole number of NICs per node, at least 1", spec, value)
			}
			l.NICs = n
		default:
			return Link{}, option.Errorf("{"+flag+"} %q: unknown key %q; keys: bandwidth, latency, algo, nics", spec, key)
		}
	}
	l.Name += "*" // overridden: the name no longer means the preset
	return l, nil
}

// parseBandwidth reads "25GB/s" (bytes), "200Gb/s" or "200Gbps" (bits),
// or a plain number of bytes per second.
func parseBandwidth(s string) (float64, error) {
	units := []struct {
		suffix string
		scale  float64
	}{
		{"GB/s", 1e9}, {"MB/s", 1e6}, {"Gb/s", 1e9 / 8}, {"Gbps", 1e9 / 8}, {"Mb/s", 1e6 / 8}, {"Mbps", 1e6 / 8},
	}
	scale := 1.0
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, scale = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.scale
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q: give a positive rate such as 25GB/s or 200Gb/s", s)
	}
	return v * scale, nil
}
