package perf

import (
	"fmt"
	"strings"
	"time"
)

// Link is one transport tensor- and pipeline-parallel traffic crosses,
// as NCCL sees it: within a node (NVLink, PCIe) or between nodes (a NIC).
type Link struct {
	Name string
	// Bandwidth is the effective per-direction rate one GPU reaches, in
	// bytes/s (what NCCL's bus bandwidth reports, not the line rate); for
	// a network link, the rate of one NIC.
	Bandwidth float64
	// Latency is the fixed cost of one message (one hop of a ring
	// collective, or one pipeline send): launch, protocol and wire.
	Latency time.Duration
	// Algorithm forces ring or tree for all-reduces on this link; the zero
	// value picks the cheaper per message, as NCCL's tuner does.
	Algorithm Algorithm
	// NICs is how many NICs per node carry a network link's traffic; 0
	// means one per GPU (rail-optimised HGX/DGX nodes).
	NICs int
	// Transport is NCCL's name for the path, as NCCL_DEBUG=INFO logs it
	// ("via P2P/CUMEM", "via NET/Socket/0").
	Transport string
	// RDMA: the transport moves GPU memory without the host's TCP stack
	// (GPUDirect RDMA over InfiniBand or RoCE).
	RDMA bool
}

// Network reports whether the link runs between nodes.
func (l Link) Network() bool { return strings.HasPrefix(l.Transport, "NET/") }

// links: see doc.go for where each number comes from. The first four are
// servebench's original presets, unchanged so that results made with them
// stay comparable.
var links = []Link{
	{Name: "nvlink", Bandwidth: 450 * gb, Latency: 2 * time.Microsecond, Transport: "P2P/CUMEM"},
	{Name: "pcie", Bandwidth: 25 * gb, Latency: 8 * time.Microsecond, Transport: "P2P/CUMEM"},
	{Name: "infiniband", Bandwidth: 40 * gb, Latency: 5 * time.Microsecond, Transport: "NET/IB/0/GDRDMA", RDMA: true},
	{Name: "ethernet", Bandwidth: 10 * gb, Latency: 60 * time.Microsecond, Transport: "NET/Socket/0"},
	{Name: "pcie-host", Bandwidth: 6 * gb, Latency: 11 * time.Microsecond, Transport: "SHM/direct/direct"},
	{Name: "ib-200g", Bandwidth: 24 * gb, Latency: 10 * time.Microsecond, Transport: "NET/IB/0/GDRDMA", RDMA: true},
	{Name: "ib-400g", Bandwidth: 48 * gb, Latency: 10 * time.Microsecond, Transport: "NET/IB/0/GDRDMA", RDMA: true},
	{Name: "roce-100g", Bandwidth: 12 * gb, Latency: 15 * time.Microsecond, Transport: "NET/IB/0/GDRDMA", RDMA: true},
	{Name: "roce-200g", Bandwidth: 24 * gb, Latency: 15 * time.Microsecond, Transport: "NET/IB/0/GDRDMA", RDMA: true},
	{Name: "roce-400g", Bandwidth: 48 * gb, Latency: 15 * time.Microsecond, Transport: "NET/IB/0/GDRDMA", RDMA: true},
	{Name: "socket-10g", Bandwidth: 1.1 * gb, Latency: 45 * time.Microsecond, Transport: "NET/Socket/0", NICs: 1},
	{Name: "socket-25g", Bandwidth: 1.9 * gb, Latency: 45 * time.Microsecond, Transport: "NET/Socket/0", NICs: 1},
	{Name: "socket-100g", Bandwidth: 7.5 * gb, Latency: 45 * time.Microsecond, Transport: "NET/Socket/0", NICs: 1},
}

// DefaultNodeLink is the inter-node link when --nodes spreads a deployment
// and none is named: NCCL falls back to TCP sockets when it finds no
// InfiniBand or RoCE device, as in most Kubernetes pod networks.
const DefaultNodeLink = "socket-25g"

// Links lists the known interconnect names.
func Links() []string {
	names := make([]string, len(links))
	for i, l := range links {
		names[i] = l.Name
	}
	return names
}

// LookupLink returns an interconnect by name (Links), or by an alias:
// nvswitch; pcie-p2p; shm, pcie-shm; ib, rdma (infiniband); eth, tcp,
// 100gbe (ethernet); roce (roce-200g); socket (socket-25g).
func LookupLink(name string) (Link, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	switch key {
	case "ib", "rdma":
		key = "infiniband"
	case "eth", "tcp", "100gbe":
		key = "ethernet"
	case "nvswitch":
		key = "nvlink"
	case "pcie-p2p", "p2p":
		key = "pcie"
	case "shm", "pcie-shm":
		key = "pcie-host"
	case "roce":
		key = "roce-200g"
	case "socket":
		key = "socket-25g"
	}
	for _, l := range links {
		if l.Name == key {
			return l, nil
		}
	}
	return Link{}, fmt.Errorf("perf: unknown link %q; use one of %s", name, strings.Join(Links(), ", "))
}

// allReduceTime is a ring all-reduce of n bytes among t GPUs on one
// node: Collective.ringAllReduce in the operation order the original
// single-link model used, so its results stay bit-identical.
func (l Link) allReduceTime(t int, n float64) float64 {
	if t <= 1 {
		return 0
	}
	steps := float64(2 * (t - 1))
	return steps*l.Latency.Seconds() + steps/float64(t)*n/l.Bandwidth
}
