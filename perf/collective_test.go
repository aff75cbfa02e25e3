package perf

import (
	"math"
	"strings"
	"testing"
	"time"
)

func mustLink(t *testing.T, name string) Link {
	t.Helper()
	l, err := LookupLink(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestCollectiveMatchesNCCLTests compares the model with published
// nccl-tests figures (doc.go, "Links", cites each): times within 15%.
func TestCollectiveMatchesNCCLTests(t *testing.T) {
	ring := func(l Link) Link { l.Algorithm = AlgoRing; return l }
	tests := []struct {
		name   string
		op     string // allreduce, sendrecv, busbw
		c      Collective
		bytes  float64
		wantUS float64 // measured time, µs (or bus bandwidth, GB/s, for busbw)
	}{
		// nccl-tests#82: broadcast_perf, 2 nodes, NCCL_IB_DISABLE=1 (NET/Socket), 8 B: 45.82 µs.
		{"socket-10g 8B message", "sendrecv", Collective{Ranks: 2, Intra: mustLink(t, "socket-10g")}, 8, 45.82},
		{"socket-25g 8B message", "sendrecv", Collective{Ranks: 2, Intra: mustLink(t, "socket-25g")}, 8, 45.82},
		{"socket-100g 8B message", "sendrecv", Collective{Ranks: 2, Intra: mustLink(t, "socket-100g")}, 8, 45.82},
		// NCCL#209: TCP sockets reach at most ~60% of wire speed: 25 GbE → 1.875 GB/s, 100 GbE → 7.5 GB/s.
		{"socket-25g bus bandwidth", "busbw", Collective{Ranks: 2, Intra: mustLink(t, "socket-25g")}, 1 << 30, 0.6 * 25 / 8},
		{"socket-100g bus bandwidth", "busbw", Collective{Ranks: 2, Intra: mustLink(t, "socket-100g")}, 1 << 30, 0.6 * 100 / 8},
		// dgx-spark-playbooks#103: all_reduce_perf, 2 nodes × 1 GB10, 200 Gb RoCE, 16 KiB: 31.67 µs.
		{"roce-200g 16KiB all-reduce", "allreduce", Collective{Ranks: 2, Nodes: 2, Intra: mustLink(t, "nvlink"), Inter: mustLink(t, "roce-200g")}, 16384, 31.67},
		// nccl-tests#252: 2 nodes × 4 H100, 4 HDR 200 Gb NICs, NCCL_ALGO=RING, 1 GiB: 20079 µs (busbw 93.6).
		{"ib-200g 2x4 GPUs 1GiB ring", "allreduce", Collective{Ranks: 8, Nodes: 2, Intra: mustLink(t, "nvlink"), Inter: ring(mustLink(t, "ib-200g"))}, 1 << 30, 20079},
		// nccl-tests#150: all_reduce_perf, 2 nodes × 1 A100, HDR InfiniBand, 8 B: 19.90 µs.
		{"ib-200g 8B all-reduce", "allreduce", Collective{Ranks: 2, Nodes: 2, Intra: mustLink(t, "nvlink"), Inter: mustLink(t, "ib-200g")}, 8, 19.90},
		// tinygrad/open-gpu-kernel-modules#17: alltoall_perf, 2 RTX 4090 with P2P disabled (SHM), 8 B: 11.64 µs.
		{"pcie-host 8B message", "sendrecv", Collective{Ranks: 2, Intra: mustLink(t, "pcie-host")}, 8, 11.64},
		// nccl-tests#212: 8 H100 NVLink all-reduce peak busBw ~480 GB/s.
		{"nvlink 8 GPUs bus bandwidth", "busbw", Collective{Ranks: 8, Intra: mustLink(t, "nvlink")}, 8 << 30, 480},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got float64
			switch tt.op {
			case "sendrecv":
				got = float64(tt.c.Intra.SendRecv(tt.bytes)) / float64(time.Microsecond)
			case "allreduce":
				d, _ := tt.c.AllReduce(tt.bytes)
				got = float64(d) / float64(time.Microsecond)
			case "busbw":
				d, _ := tt.c.AllReduce(tt.bytes)
				n := float64(tt.c.Ranks)
				got = tt.bytes / d.Seconds() * 2 * (n - 1) / n / 1e9
			}
			if math.Abs(got-tt.wantUS)/tt.wantUS > 0.15 {
				t.Errorf("model %.2f, measured %.2f: off by more than 15%%", got, tt.wantUS)
			}
		})
	}
}

// TestAlgorithmChoice: across nodes NCCL runs tree for small messages and
// ring for large ones; within a node the tree is a chain, never cheaper.
func TestAlgorithmChoice(t *testing.T) {
	nv, ib := mustLink(t, "nvlink"), mustLink(t, "ib-400g")
	tests := []struct {
		name  string
		c     Collective
		bytes float64
		want  Algorithm
	}{
		{"TP16 over 2 nodes, one decode token", Collective{Ranks: 16, Nodes: 2, Intra: nv, Inter: ib}, 16384, AlgoTree},
		{"TP16 over 2 nodes, 1 GiB", Collective{Ranks: 16, Nodes: 2, Intra: nv, Inter: ib}, 1 << 30, AlgoRing},
		{"TP8 in one node, small", Collective{Ranks: 8, Nodes: 1, Intra: nv}, 16384, AlgoRing},
		{"TP2 over 2 nodes, small", Collective{Ranks: 2, Nodes: 2, Intra: nv, Inter: ib}, 16384, AlgoRing},
		{"forced tree", Collective{Ranks: 16, Nodes: 2, Intra: nv, Inter: Link{Name: "x", Bandwidth: ib.Bandwidth, Latency: ib.Latency, Algorithm: AlgoTree}}, 1 << 30, AlgoTree},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, got := tt.c.AllReduce(tt.bytes); got != tt.want {
				t.Errorf("algorithm %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSingleNodeCollectiveIsTheLegacyRing: within one node the collective
// model is the original ring formula, so old results do not move.
func TestSingleNodeCollectiveIsTheLegacyRing(t *testing.T) {
	for _, name := range []string{"nvlink", "pcie", "infiniband", "ethernet"} {
		l := mustLink(t, name)
		for _, n := range []int{2, 4, 8} {
			for _, bytes := range []float64{0, 7168, 1 << 24} {
				got, _ := Collective{Ranks: n, Intra: l}.allReduceSeconds(bytes)
				if want := l.allReduceTime(n, bytes); got != want {
					t.Errorf("%s n=%d bytes=%g: %g, legacy %g", name, n, bytes, got, want)
				}
			}
		}
	}
}

func TestPlacement(t *testing.T) {
	tests := []struct {
		tp, pp, nodes int
		tpNodes       int
		cross         []bool // per stage boundary
	}{
		{2, 1, 2, 2, nil},
		{1, 2, 2, 1, []bool{true}},
		{8, 2, 2, 1, []bool{true}},
		{16, 1, 2, 2, nil},
		{2, 4, 2, 1, []bool{false, true, false}},
	}
	for _, tt := range tests {
		p := Deployment{TensorParallel: tt.tp, PipelineParallel: tt.pp, Nodes: tt.nodes}.Placement()
		if got := p.TPNodes(); got != tt.tpNodes {
			t.Errorf("TP%d PP%d nodes %d: TP spans %d nodes, want %d", tt.tp, tt.pp, tt.nodes, got, tt.tpNodes)
		}
		for s, want := range tt.cross {
			if got := p.CrossNodeBoundary(s); got != want {
				t.Errorf("TP%d PP%d nodes %d: boundary %d crosses=%v, want %v", tt.tp, tt.pp, tt.nodes, s, got, want)
			}
		}
	}
}

func TestParseLink(t *testing.T) {
	tests := []struct {
		spec    string
		want    Link
		wantErr string
	}{
		{spec: "socket-25g", want: mustLink(t, "socket-25g")},
		{spec: "tcp", want: mustLink(t, "ethernet")},
		{spec: "roce-200g:latency=20us,bandwidth=200Gb/s,algo=tree,nics=2",
			want: Link{Name: "roce-200g*", Bandwidth: 25e9, Latency: 20 * time.Microsecond, Algorithm: AlgoTree, NICs: 2, Transport: "NET/IB/0/GDRDMA", RDMA: true}},
		{spec: "pcie:bw=12GB/s", want: Link{Name: "pcie*", Bandwidth: 12e9, Latency: 8 * time.Microsecond, Transport: "P2P/CUMEM"}},
		{spec: "warp-drive", wantErr: `link "warp-drive": perf: unknown link`},
		{spec: "pcie:latency=-1us", wantErr: "latency"},
		{spec: "pcie:bandwidth=0", wantErr: "positive rate"},
		{spec: "pcie:algo=butterfly", wantErr: "auto, ring or tree"},
		{spec: "pcie:nics=0", wantErr: "at least 1"},
		{spec: "pcie:speed=1", wantErr: "unknown key"},
		{spec: "pcie:latency", wantErr: "not key=value"},
	}
	for _, tt := range tests {
		got, err := ParseLink(tt.spec, "link")
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseLink(%q) error %v, want %q", tt.spec, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseLink(%q) = %+v, %v; want %+v", tt.spec, got, err, tt.want)
		}
	}
}

func FuzzParseLink(f *testing.F) {
	for _, s := range []string{"pcie", "socket-25g:latency=40us,bw=3GB/s", "ib:algo=tree,nics=8", ":", "x:=,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		l, err := ParseLink(spec, "link")
		if err == nil && (!(l.Bandwidth > 0) || l.Latency < 0) {
			t.Errorf("ParseLink(%q) accepted %+v", spec, l)
		}
	})
}

// TestCrossNodeTPSlowsDecode: a TP group split over TCP sockets pays
// per-message latency on every layer's two all-reduces.
func TestCrossNodeTPSlowsDecode(t *testing.T) {
	m, err := LookupModel("Qwen/Qwen2-7B")
	if err != nil {
		t.Skip(err)
	}
	g, _ := LookupGPU("A10")
	base := DefaultDeployment(m, g)
	base.TensorParallel = 2
	same, err := NewRoofline(base)
	if err != nil {
		t.Fatal(err)
	}
	cross := base
	cross.Nodes = 2
	cross.NodeLink = mustLink(t, "socket-25g")
	crossR, err := NewRoofline(cross)
	if err != nil {
		t.Fatal(err)
	}
	shape := StepShape{Decodes: 50, KVTokens: 50 * 1500}
	a, b := same.Breakdown(shape), crossR.Breakdown(shape)
	// 57 all-reduces of 50 tokens × 3584 × 2 B over 2 ranks: 57·(2·45 µs + 358 KB/1.9 GB/s) ≈ 16 ms.
	if extra := b.Communication - a.Communication; extra < 12*time.Millisecond || extra > 20*time.Millisecond {
		t.Errorf("cross-node communication adds %v per decode step of 50, want ≈16 ms", extra)
	}
}
