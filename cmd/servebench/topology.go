package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/workload"
)

// roleFlags override the engine flags for one P/D role.
type roleFlags struct {
	maxNumSeqs, maxNumBatchedTokens, tensorParallel int
	gpuMemoryUtilization                            float64
}

// topologyFlags are sim's fleet flags: replicas behind a router, or
// prefill/decode disaggregation with a KV link.
type topologyFlags struct {
	fs *pflag.FlagSet

	kind             string
	replicas         int
	router           string
	prefillInstances int
	decodeInstances  int
	prefill, decode  roleFlags

	kvLink         string
	kvLinkNICs     int
	kvLinkGBps     float64
	kvLinkSetup    time.Duration
	handoff        string
	hopCost        time.Duration
	layerwise      bool
	hiddenStates   bool
	kvBufferSize   float64
	kvOverflow     string
	spillGBps      float64
	overrideHidden bool
}

func (f *topologyFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.kind, "topology", "", "simulate a fleet: colocated (--replicas behind --router) or pd (prefill/decode disaggregation); default: one engine")
	fs.IntVar(&f.replicas, "replicas", 1, "colocated: number of engine replicas")
	fs.StringVar(&f.router, "router", "rr", "how the router picks an instance: "+strings.Join(sim.RouterPolicies(), ", "))
	fs.IntVar(&f.prefillInstances, "prefill-instances", 1, "pd: prefill instances")
	fs.IntVar(&f.decodeInstances, "decode-instances", 1, "pd: decode instances")
	for _, r := range []struct {
		name string
		rf   *roleFlags
	}{{"prefill", &f.prefill}, {"decode", &f.decode}} {
		fs.IntVar(&r.rf.maxNumSeqs, r.name+"-max-num-seqs", 0, "pd: --max-num-seqs of the "+r.name+" instances (default: --max-num-seqs)")
		fs.IntVar(&r.rf.maxNumBatchedTokens, r.name+"-max-num-batched-tokens", 0, "pd: --max-num-batched-tokens of the "+r.name+" instances (default: --max-num-batched-tokens)")
		fs.IntVar(&r.rf.tensorParallel, r.name+"-tensor-parallel-size", 0, "pd: --tensor-parallel-size of the "+r.name+" instances (also --"+r.name+"-tp; default: -tp)")
		fs.IntVar(&r.rf.tensorParallel, r.name+"-tp", 0, "")
		_ = fs.MarkHidden(r.name + "-tp")
		fs.Float64Var(&r.rf.gpuMemoryUtilization, r.name+"-gpu-memory-utilization", 0, "pd: --gpu-memory-utilization of the "+r.name+" instances (default: --gpu-memory-utilization)")
	}
	fs.StringVar(&f.kvLink, "kv-link", "rdma", "pd: KV transfer network preset: "+strings.Join(perf.KVLinkNames(), ", ")+" (one link per TP rank)")
	fs.IntVar(&f.kvLinkNICs, "kv-link-nics", 0, "pd: override the preset's NICs per TP rank (aggregated)")
	fs.Float64Var(&f.kvLinkGBps, "kv-link-bandwidth", 0, "pd: override the preset's sustained bandwidth per NIC, GB/s")
	fs.DurationVar(&f.kvLinkSetup, "kv-link-setup", 0, "pd: override the preset's fixed cost per transfer (e.g. 500us)")
	fs.StringVar(&f.handoff, "pd-handoff", string(sim.HandoffSequential), "pd: sequential (V0 / NIXL toy proxy: decode is sent after prefill returns) or concurrent (P2pNccl: both at once)")
	fs.DurationVar(&f.hopCost, "pd-proxy-overhead", 2*time.Millisecond, "pd: fixed cost of one proxy hop (HTTP round trip, re-tokenisation); sequential handoff pays two per request, concurrent one")
	fs.BoolVar(&f.layerwise, "kv-layerwise", false, "pd: send each layer's KV while the prefill computes the next (V1 connectors) instead of after the forward pass")
	fs.BoolVar(&f.hiddenStates, "kv-send-hidden-states", false, "pd: also send the last layer's hidden states per token, as V0 connectors do (default: on for --engine v0)")
	fs.Float64Var(&f.kvBufferSize, "kv-buffer-size", 1e9, "pd: decode receive buffer per TP rank, bytes (vLLM's kv_buffer_size); 0 for unbounded")
	fs.StringVar(&f.kvOverflow, "kv-buffer-overflow", string(sim.OverflowSpill), "pd: KV that does not fit the receive buffer: spill (host memory, copied in over PCIe) or recompute (decode redoes the prefill)")
	fs.Float64Var(&f.spillGBps, "kv-spill-bandwidth", 21, "pd: host-to-GPU copy rate for spilled KV, GB/s (PCIe 4.0, per vLLM's P2pNccl design doc)")
}

func (f *topologyFlags) active() bool { return f.kind != "" }

func (f *topologyFlags) changed(name string) bool { return f.fs != nil && f.fs.Changed(name) }

// build resolves every pool through the engine flags (with the role's
// overrides) and the KV link from its preset and overrides.
func (f *topologyFlags) build(base *engineFlags, seed int64) (sim.TopologyConfig, error) {
	var cfg sim.TopologyConfig
	router, err := sim.ParseRouterPolicy(f.router)
	if err != nil {
		return cfg, fmt.Errorf("--router: %w", err)
	}
	cfg.Router, cfg.Seed = router, uint64(seed)
	switch strings.ToLower(f.kind) {
	case "colocated":
		cfg.Kind = sim.Colocated
		if f.replicas < 1 {
			return cfg, fmt.Errorf("--replicas %d: give at least 1", f.replicas)
		}
		for _, name := range []string{"prefill-instances", "decode-instances"} {
			if f.changed(name) {
				return cfg, fmt.Errorf("--%s is for --topology pd; a colocated fleet takes --replicas", name)
			}
		}
		cfg.Replicas, _, err = f.pool(base, "", roleFlags{}, f.replicas)
		return cfg, err
	case "pd":
		cfg.Kind = sim.Disaggregated
	default:
		return cfg, fmt.Errorf("--topology %q: use colocated or pd", f.kind)
	}
	if f.changed("replicas") {
		return cfg, fmt.Errorf("--replicas is for --topology colocated; a pd fleet takes --prefill-instances and --decode-instances")
	}
	if f.prefillInstances < 1 || f.decodeInstances < 1 {
		return cfg, fmt.Errorf("--prefill-instances %d and --decode-instances %d: give at least 1 of each", f.prefillInstances, f.decodeInstances)
	}
	var prefillTP, decodeTP int
	if cfg.Prefill, prefillTP, err = f.pool(base, "prefill", f.prefill, f.prefillInstances); err != nil {
		return cfg, fmt.Errorf("prefill instances: %w", err)
	}
	if cfg.Decode, decodeTP, err = f.pool(base, "decode", f.decode, f.decodeInstances); err != nil {
		return cfg, fmt.Errorf("decode instances: %w", err)
	}
	link, err := perf.LookupKVLink(f.kvLink)
	if err != nil {
		return cfg, fmt.Errorf("--kv-link: %w", err)
	}
	if f.changed("kv-link-nics") {
		link.NICs = f.kvLinkNICs
	}
	if f.changed("kv-link-bandwidth") {
		link.NICBandwidth = f.kvLinkGBps * 1e9
	}
	if f.changed("kv-link-setup") {
		link.Setup = f.kvLinkSetup
	}
	if err := link.Validate(); err != nil {
		return cfg, fmt.Errorf("--kv-link-nics, --kv-link-bandwidth, --kv-link-setup: %w", err)
	}
	handoff := sim.Handoff(strings.ToLower(f.handoff))
	if handoff != sim.HandoffSequential && handoff != sim.HandoffConcurrent {
		return cfg, fmt.Errorf("--pd-handoff %q: use sequential or concurrent", f.handoff)
	}
	overflow := sim.Overflow(strings.ToLower(f.kvOverflow))
	if overflow != sim.OverflowSpill && overflow != sim.OverflowRecompute {
		return cfg, fmt.Errorf("--kv-buffer-overflow %q: use spill or recompute", f.kvOverflow)
	}
	if f.hopCost < 0 {
		return cfg, fmt.Errorf("--pd-proxy-overhead %v: must not be negative", f.hopCost)
	}
	if f.kvBufferSize < 0 || !(f.spillGBps > 0) {
		return cfg, fmt.Errorf("--kv-buffer-size (%g) must be 0 or more bytes and --kv-spill-bandwidth (%g) a positive GB/s", f.kvBufferSize, f.spillGBps)
	}
	dep := base.resolved.Deployment
	cfg.Transfer = sim.KVTransfer{
		Link:          link,
		BytesPerToken: kvBytesPerToken(dep, cfg.Prefill.Engine.Version, f.changed("kv-send-hidden-states"), f.hiddenStates),
		// Each TP rank ships its shard over its own link; with unequal TP
		// the side with fewer ranks (links) is the bottleneck.
		Ranks:   min(prefillTP, decodeTP),
		Handoff: handoff, HopCost: f.hopCost, LayerwiseOverlap: f.layerwise, Layers: dep.Model.Layers,
		BufferBytes: int64(f.kvBufferSize), Overflow: overflow, SpillBandwidth: f.spillGBps * 1e9,
	}
	return cfg, nil
}

// pool resolves one pool's engine through vLLM's rules with the role's
// overrides, and returns its tensor-parallel size. Errors name the role's
// flag where the role overrode the shared one.
func (f *topologyFlags) pool(base *engineFlags, role string, r roleFlags, n int) (sim.Pool, int, error) {
	if r.maxNumSeqs < 0 || r.maxNumBatchedTokens < 0 || r.tensorParallel < 0 {
		return sim.Pool{}, 0, fmt.Errorf("per-role --max-num-seqs (%d), --max-num-batched-tokens (%d) and --tensor-parallel-size (%d) must be positive",
			r.maxNumSeqs, r.maxNumBatchedTokens, r.tensorParallel)
	}
	ef := *base
	ef.resolved = nil
	var renamed []string
	if r.maxNumSeqs != 0 {
		ef.maxNumSeqs = r.maxNumSeqs
		renamed = append(renamed, "max-num-seqs")
	}
	if r.maxNumBatchedTokens != 0 {
		ef.maxNumBatchedTokens = r.maxNumBatchedTokens
		renamed = append(renamed, "max-num-batched-tokens")
	}
	if r.tensorParallel != 0 {
		ef.tensorParallel = r.tensorParallel
		renamed = append(renamed, "tensor-parallel-size", "tp")
	}
	if r.gpuMemoryUtilization != 0 {
		ef.gpuMemoryUtilization = r.gpuMemoryUtilization
		renamed = append(renamed, "gpu-memory-utilization")
	}
	dep, _, ec, model, err := ef.build()
	if err != nil {
		msg := err.Error()
		for _, name := range renamed {
			msg = strings.ReplaceAll(msg, "--"+name+" ", "--"+role+"-"+name+" ")
		}
		return sim.Pool{}, 0, &roleFlagError{msg: msg, err: err}
	}
	return sim.Pool{Instances: n, Engine: ec, Model: model, GPUs: dep.TensorParallel * dep.PipelineParallel}, dep.TensorParallel, nil
}

// runTopology runs the fleet, feeding add, and returns the result JSON
// section and the text section to print.
func runTopology(ctx context.Context, cfg sim.TopologyConfig, reqs *workload.Stream, add func(*metrics.Record) error) (report.Section, func(io.Writer) error, error) {
	res, err := sim.RunTopologyStream(ctx, cfg, reqs, add)
	if err != nil {
		return report.Section{}, nil, err
	}
	section := report.Section{Key: "fleet", Value: topologyJSON(cfg, res)}
	write := func(w io.Writer) error { return writeTopologySection(w, cfg, res) }
	return section, write, nil
}

func topologyMetadata(cfg sim.TopologyConfig) [][2]string {
	kind := string(cfg.Kind)
	if cfg.Kind == sim.Disaggregated {
		kind = fmt.Sprintf("%dP%dD-%s", cfg.Prefill.Instances, cfg.Decode.Instances, cfg.Transfer.Link.Name)
	} else if cfg.Replicas.Instances > 1 {
		kind = fmt.Sprintf("colocated-x%d", cfg.Replicas.Instances)
	}
	return [][2]string{{"topology", kind}, {"gpus", strconv.Itoa(cfg.GPUs())}}
}

func writeTopologySection(w io.Writer, cfg sim.TopologyConfig, res *sim.TopologyResult) error {
	hit := 0.0
	if res.PrefixQueries > 0 {
		hit = 100 * float64(res.PrefixHits) / float64(res.PrefixQueries)
	}
	rows := [][2]string{
		{"Topology:", cfg.String()},
		{"GPUs:", strconv.Itoa(cfg.GPUs())},
		{"Prefix cache hit rate (%):", fmt.Sprintf("%.2f", hit)},
	}
	for _, l := range res.Lines() {
		k, v, _ := strings.Cut(l, ": ")
		rows = append(rows, [2]string{k + ":", v})
	}
	return report.WriteSection(w, "Simulated Topology", rows)
}

func topologyJSON(cfg sim.TopologyConfig, res *sim.TopologyResult) map[string]any {
	instances := make([]map[string]any, 0, len(res.Instances))
	for _, in := range res.Instances {
		instances = append(instances, map[string]any{
			"role": in.Role, "index": in.Index, "requests": in.Requests, "steps": in.Engine.Steps,
			"preemptions": in.Engine.Preemptions, "max_kv_cache_usage": in.MaxKVUsage,
			"prefix_cache_queries": in.Engine.PrefixQueries, "prefix_cache_hits": in.Engine.PrefixHits,
		})
	}
	out := map[string]any{
		"kind": string(cfg.Kind), "router": string(cfg.Router), "gpus": cfg.GPUs(), "description": cfg.String(),
		"instances": instances, "simulated_duration_s": res.Duration.Seconds(),
		"prefix_cache_queries": res.PrefixQueries, "prefix_cache_hits": res.PrefixHits,
	}
	pool := func(p sim.Pool) map[string]any {
		return map[string]any{"instances": p.Instances, "gpus_per_instance": p.GPUs, "max_num_seqs": p.Engine.MaxNumSeqs,
			"max_num_batched_tokens": p.Engine.MaxNumBatchedTokens, "gpu_blocks": p.Engine.NumGPUBlocks}
	}
	if cfg.Kind == sim.Colocated {
		out["replicas"] = pool(cfg.Replicas)
	}
	if cfg.Kind == sim.Disaggregated {
		out["prefill"], out["decode"] = pool(cfg.Prefill), pool(cfg.Decode)
		t, tr := cfg.Transfer, res.Transfers
		out["kv_transfer"] = map[string]any{
			"link": t.Link.Name, "nics": t.Link.NICs, "nic_bandwidth_gbps": t.Link.NICBandwidth / 1e9, "setup_ms": ms(t.Link.Setup),
			"bytes_per_token": t.BytesPerToken, "ranks": t.Ranks, "handoff": string(t.Handoff), "proxy_overhead_ms": ms(t.HopCost),
			"layerwise": t.LayerwiseOverlap, "buffer_bytes": t.BufferBytes, "overflow": string(t.Overflow),
			"transfers": tr.Count, "spilled": tr.Spilled, "recomputed": tr.Recomputed,
			"bytes_sent": tr.BytesSent, "bytes_received": tr.BytesReceived, "max_buffer_bytes": tr.MaxBufferBytes,
			"mean_ms": ms(tr.Mean), "median_ms": ms(tr.Median), "p99_ms": ms(tr.P99),
		}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// roleFlagError restates an engine-flag error with the per-role flag the
// user typed.
type roleFlagError struct {
	msg string
	err error
}

func (e *roleFlagError) Error() string { return e.msg }
func (e *roleFlagError) Unwrap() error { return e.err }
