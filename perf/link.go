package perf

import (
	"fmt"
	"strings"
	"time"
)

// Link is the interconnect tensor- and pipeline-parallel traffic crosses.
type Link struct {
	Name string
	// Bandwidth is the effective per-direction rate one GPU reaches, in
	// bytes/s (what NCCL's bus bandwidth reports, not the line rate).
	Bandwidth float64
	// Latency is the fixed cost of one message (one hop of a ring
	// collective, or one pipeline send): launch, protocol and wire.
	Latency time.Duration
}

// links: see doc.go for where each number comes from.
var links = []Link{
	{Name: "nvlink", Bandwidth: 450 * gb, Latency: 2 * time.Microsecond},
	{Name: "pcie", Bandwidth: 25 * gb, Latency: 8 * time.Microsecond},
	{Name: "infiniband", Bandwidth: 40 * gb, Latency: 5 * time.Microsecond},
	{Name: "ethernet", Bandwidth: 10 * gb, Latency: 60 * time.Microsecond},
}

// Links lists the known interconnect names.
func Links() []string {
	names := make([]string, len(links))
	for i, l := range links {
		names[i] = l.Name
	}
	return names
}

// LookupLink returns an interconnect by name: nvlink, pcie, infiniband
// (also "ib") or ethernet (also "eth", "tcp").
func LookupLink(name string) (Link, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	switch key {
	case "ib", "rdma":
		key = "infiniband"
	case "eth", "tcp", "100gbe":
		key = "ethernet"
	case "nvswitch":
		key = "nvlink"
	}
	for _, l := range links {
		if l.Name == key {
			return l, nil
		}
	}
	return Link{}, fmt.Errorf("perf: unknown link %q; use one of %s", name, strings.Join(Links(), ", "))
}

// allReduceTime is a ring all-reduce of n bytes among t GPUs:
// 2(t−1) messages, each rank sending 2(t−1)/t·n bytes.
func (l Link) allReduceTime(t int, n float64) float64 {
	if t <= 1 {
		return 0
	}
	steps := float64(2 * (t - 1))
	return steps*l.Latency.Seconds() + steps/float64(t)*n/l.Bandwidth
}
