package runspec

import (
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/perf"
)

// Router policies and P/D choices as sim names them; sim checks the
// values (it owns what they mean).
const (
	defaultRouter   = "rr"
	defaultHandoff  = "sequential"
	defaultOverflow = "spill"
	routerPolicies  = "rr, least-loaded, prefix-aware, random"
)

// RoleOverrides override the engine flags for one P/D role; zero keeps
// the shared flag.
type RoleOverrides struct {
	MaxNumSeqs, MaxNumBatchedTokens, TensorParallel int
	GPUMemoryUtilization                            float64
}

// Topology is sim's fleet: replicas behind a router, or prefill/decode
// disaggregation with a KV link.
type Topology struct {
	Kind             string
	Replicas         int
	Router           string
	PrefillInstances int
	DecodeInstances  int
	Prefill, Decode  RoleOverrides

	KVLink              string
	KVLinkNICs          int
	KVLinkBandwidthGBps float64
	KVLinkSetup         time.Duration
	Handoff             string
	ProxyOverhead       time.Duration
	Layerwise           bool
	SendHiddenStates    bool
	KVBufferSize        float64
	KVBufferOverflow    string
	SpillBandwidthGBps  float64
}

// Register adds the fleet flags to fs.
func (t *Topology) Register(fs *pflag.FlagSet) {
	fs.StringVar(&t.Kind, "topology", "", "simulate a fleet: colocated (--replicas behind --router) or pd (prefill/decode disaggregation); default: one engine")
	fs.IntVar(&t.Replicas, "replicas", 1, "colocated: number of engine replicas")
	fs.StringVar(&t.Router, "router", defaultRouter, "how the router picks an instance: "+routerPolicies)
	fs.IntVar(&t.PrefillInstances, "prefill-instances", 1, "pd: prefill instances")
	fs.IntVar(&t.DecodeInstances, "decode-instances", 1, "pd: decode instances")
	for _, r := range []struct {
		name string
		o    *RoleOverrides
	}{{"prefill", &t.Prefill}, {"decode", &t.Decode}} {
		fs.IntVar(&r.o.MaxNumSeqs, r.name+"-max-num-seqs", 0, "pd: --max-num-seqs of the "+r.name+" instances (default: --max-num-seqs)")
		fs.IntVar(&r.o.MaxNumBatchedTokens, r.name+"-max-num-batched-tokens", 0, "pd: --max-num-batched-tokens of the "+r.name+" instances (default: --max-num-batched-tokens)")
		fs.IntVar(&r.o.TensorParallel, r.name+"-tensor-parallel-size", 0, "pd: --tensor-parallel-size of the "+r.name+" instances (also --"+r.name+"-tp; default: -tp)")
		fs.IntVar(&r.o.TensorParallel, r.name+"-tp", 0, "")
		_ = fs.MarkHidden(r.name + "-tp")
		fs.Float64Var(&r.o.GPUMemoryUtilization, r.name+"-gpu-memory-utilization", 0, "pd: --gpu-memory-utilization of the "+r.name+" instances (default: --gpu-memory-utilization)")
	}
	fs.StringVar(&t.KVLink, "kv-link", "rdma", "pd: KV transfer network preset: "+strings.Join(perf.KVLinkNames(), ", ")+" (one link per TP rank)")
	fs.IntVar(&t.KVLinkNICs, "kv-link-nics", 0, "pd: override the preset's NICs per TP rank (aggregated)")
	fs.Float64Var(&t.KVLinkBandwidthGBps, "kv-link-bandwidth", 0, "pd: override the preset's sustained bandwidth per NIC, GB/s")
	fs.DurationVar(&t.KVLinkSetup, "kv-link-setup", 0, "pd: override the preset's fixed cost per transfer (e.g. 500us)")
	fs.StringVar(&t.Handoff, "pd-handoff", defaultHandoff, "pd: sequential (V0 / NIXL toy proxy: decode is sent after prefill returns) or concurrent (P2pNccl: both at once)")
	fs.DurationVar(&t.ProxyOverhead, "pd-proxy-overhead", 2*time.Millisecond, "pd: fixed cost of one proxy hop (HTTP round trip, re-tokenisation); sequential handoff pays two per request, concurrent one")
	fs.BoolVar(&t.Layerwise, "kv-layerwise", false, "pd: send each layer's KV while the prefill computes the next (V1 connectors) instead of after the forward pass")
	fs.BoolVar(&t.SendHiddenStates, "kv-send-hidden-states", false, "pd: also send the last layer's hidden states per token, as V0 connectors do (default: on for --engine v0)")
	fs.Float64Var(&t.KVBufferSize, "kv-buffer-size", 1e9, "pd: decode receive buffer per TP rank, bytes (vLLM's kv_buffer_size); 0 for unbounded")
	fs.StringVar(&t.KVBufferOverflow, "kv-buffer-overflow", defaultOverflow, "pd: KV that does not fit the receive buffer: spill (host memory, copied in over PCIe) or recompute (decode redoes the prefill)")
	fs.Float64Var(&t.SpillBandwidthGBps, "kv-spill-bandwidth", 21, "pd: host-to-GPU copy rate for spilled KV, GB/s (PCIe 4.0, per vLLM's P2pNccl design doc)")
}

// Active reports whether a fleet, not one engine, is simulated.
func (t *Topology) Active() bool { return t.Kind != "" }
