package sim

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/workload"
)

// TopologyOf is a sim spec's fleet: every pool resolved through the
// engine flags (with the role's overrides) and the KV link from its
// preset and overrides. base is the spec's resolved engine.
func TopologyOf(ctx context.Context, s *runspec.Spec, base *runspec.ResolvedEngine) (TopologyConfig, error) {
	f := &s.Topology
	changed := s.ChangedFunc()
	var cfg TopologyConfig
	if base != nil && base.Resolved != nil {
		cfg.Ingest, cfg.Delivery, cfg.IngestSpacing = base.Ingest, base.Delivery, base.IngestSpacing
	}
	router, err := ParseRouterPolicy(f.Router)
	if err != nil {
		return cfg, fmt.Errorf("--router: %w", err)
	}
	cfg.Router, cfg.Seed = router, uint64(s.Workload.Dataset.Seed)
	switch strings.ToLower(f.Kind) {
	case "colocated":
		cfg.Kind = Colocated
		if f.Replicas < 1 {
			return cfg, fmt.Errorf("--replicas %d: give at least 1", f.Replicas)
		}
		for _, name := range []string{"prefill-instances", "decode-instances"} {
			if changed(name) {
				return cfg, fmt.Errorf("--%s is for --topology pd; a colocated fleet takes --replicas", name)
			}
		}
		cfg.Replicas, _, err = pool(ctx, s, changed, "", runspec.RoleOverrides{}, f.Replicas)
		return cfg, err
	case "pd":
		cfg.Kind = Disaggregated
	default:
		return cfg, fmt.Errorf("--topology %q: use colocated or pd", f.Kind)
	}
	if changed("replicas") {
		return cfg, fmt.Errorf("--replicas is for --topology colocated; a pd fleet takes --prefill-instances and --decode-instances")
	}
	if f.PrefillInstances < 1 || f.DecodeInstances < 1 {
		return cfg, fmt.Errorf("--prefill-instances %d and --decode-instances %d: give at least 1 of each", f.PrefillInstances, f.DecodeInstances)
	}
	var prefillTP, decodeTP int
	if cfg.Prefill, prefillTP, err = pool(ctx, s, changed, "prefill", f.Prefill, f.PrefillInstances); err != nil {
		return cfg, fmt.Errorf("prefill instances: %w", err)
	}
	if cfg.Decode, decodeTP, err = pool(ctx, s, changed, "decode", f.Decode, f.DecodeInstances); err != nil {
		return cfg, fmt.Errorf("decode instances: %w", err)
	}
	link, err := kvLinkOf(f, changed)
	if err != nil {
		return cfg, err
	}
	handoff := Handoff(strings.ToLower(f.Handoff))
	if handoff != HandoffSequential && handoff != HandoffConcurrent {
		return cfg, fmt.Errorf("--pd-handoff %q: use sequential or concurrent", f.Handoff)
	}
	overflow := Overflow(strings.ToLower(f.KVBufferOverflow))
	if overflow != OverflowSpill && overflow != OverflowRecompute {
		return cfg, fmt.Errorf("--kv-buffer-overflow %q: use spill or recompute", f.KVBufferOverflow)
	}
	if f.ProxyOverhead < 0 {
		return cfg, fmt.Errorf("--pd-proxy-overhead %v: must not be negative", f.ProxyOverhead)
	}
	if f.KVBufferSize < 0 || !(f.SpillBandwidthGBps > 0) {
		return cfg, fmt.Errorf("--kv-buffer-size (%g) must be 0 or more bytes and --kv-spill-bandwidth (%g) a positive GB/s", f.KVBufferSize, f.SpillBandwidthGBps)
	}
	dep := base.Deployment
	hidden := f.SendHiddenStates
	if !changed("kv-send-hidden-states") {
		hidden = cfg.Prefill.Engine.Version == engine.V0 // V0 connectors send the hidden states too
	}
	cfg.Transfer = KVTransfer{
		Link:          link,
		BytesPerToken: perf.KVTransferBytes(dep.Model, dep.KVCacheDType, 1, hidden),
		// Each TP rank ships its shard over its own link; with unequal TP
		// the side with fewer ranks (links) is the bottleneck.
		Ranks:   min(prefillTP, decodeTP),
		Handoff: handoff, HopCost: f.ProxyOverhead, LayerwiseOverlap: f.Layerwise, Layers: dep.Model.Layers,
		BufferBytes: int64(f.KVBufferSize), Overflow: overflow, SpillBandwidth: f.SpillBandwidthGBps * 1e9,
	}
	return cfg, nil
}

// kvLinkOf is the P/D fleet's KV link: the --kv-link preset with the
// flags that override its parts.
func kvLinkOf(f *runspec.Topology, changed func(string) bool) (perf.KVLink, error) {
	link, err := perf.LookupKVLink(f.KVLink)
	if err != nil {
		return link, fmt.Errorf("--kv-link: %w", err)
	}
	if changed("kv-link-nics") {
		link.NICs = f.KVLinkNICs
	}
	if changed("kv-link-bandwidth") {
		link.NICBandwidth = f.KVLinkBandwidthGBps * 1e9
	}
	if changed("kv-link-setup") {
		link.Setup = f.KVLinkSetup
	}
	if err := link.Validate(); err != nil {
		return link, fmt.Errorf("--kv-link-nics, --kv-link-bandwidth, --kv-link-setup: %w", err)
	}
	return link, nil
}

// pool resolves one pool's engine through vLLM's rules with the role's
// overrides, and returns its tensor-parallel size. Errors name the role's
// flag where the role overrode the shared one.
func pool(ctx context.Context, s *runspec.Spec, changed func(string) bool, role string, r runspec.RoleOverrides, n int) (Pool, int, error) {
	if r.MaxNumSeqs < 0 || r.MaxNumBatchedTokens < 0 || r.TensorParallel < 0 {
		return Pool{}, 0, fmt.Errorf("per-role --max-num-seqs (%d), --max-num-batched-tokens (%d) and --tensor-parallel-size (%d) must be positive",
			r.MaxNumSeqs, r.MaxNumBatchedTokens, r.TensorParallel)
	}
	ef := s.Engine
	var renamed []string
	if r.MaxNumSeqs != 0 {
		ef.MaxNumSeqs = r.MaxNumSeqs
		renamed = append(renamed, "max-num-seqs")
	}
	if r.MaxNumBatchedTokens != 0 {
		ef.MaxNumBatchedTokens = r.MaxNumBatchedTokens
		renamed = append(renamed, "max-num-batched-tokens")
	}
	if r.TensorParallel != 0 {
		ef.TensorParallel = r.TensorParallel
		renamed = append(renamed, "tensor-parallel-size", "tp")
	}
	if r.GPUMemoryUtilization != 0 {
		ef.GPUMemoryUtilization = r.GPUMemoryUtilization
		renamed = append(renamed, "gpu-memory-utilization")
	}
	res, err := ef.Resolve(ctx, changed, s.Env)
	if err != nil {
		msg := err.Error()
		for _, name := range renamed {
			msg = strings.ReplaceAll(msg, "--"+name+" ", "--"+role+"-"+name+" ")
		}
		return Pool{}, 0, &roleFlagError{msg: msg, err: err}
	}
	dep := res.Deployment
	return Pool{Instances: n, Engine: res.Engine, Model: res.StepModel, GPUs: dep.TensorParallel * dep.PipelineParallel,
		AsyncOutputLag: res.AsyncOutputLag, ColdStart: res.ColdStart}, dep.TensorParallel, nil
}

// runFleet runs the fleet, feeding add, and returns the result JSON
// section and the text section to print.
func runFleet(ctx context.Context, cfg TopologyConfig, reqs *workload.Stream, add func(*metrics.Record) error) (report.Section, func(io.Writer) error, error) {
	res, err := RunTopologyStream(ctx, cfg, reqs, add)
	if err != nil {
		return report.Section{}, nil, err
	}
	section := report.Section{Key: "fleet", Value: topologyJSON(cfg, res)}
	write := func(w io.Writer) error { return writeTopologySection(w, cfg, res) }
	return section, write, nil
}

func topologyMetadata(cfg TopologyConfig) [][2]string {
	kind := string(cfg.Kind)
	if cfg.Kind == Disaggregated {
		kind = fmt.Sprintf("%dP%dD-%s", cfg.Prefill.Instances, cfg.Decode.Instances, cfg.Transfer.Link.Name)
	} else if cfg.Replicas.Instances > 1 {
		kind = fmt.Sprintf("colocated-x%d", cfg.Replicas.Instances)
	}
	return [][2]string{{"topology", kind}, {"gpus", strconv.Itoa(cfg.GPUs())}}
}

func writeTopologySection(w io.Writer, cfg TopologyConfig, res *TopologyResult) error {
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

func topologyJSON(cfg TopologyConfig, res *TopologyResult) map[string]any {
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
	pool := func(p Pool) map[string]any {
		return map[string]any{"instances": p.Instances, "gpus_per_instance": p.GPUs, "max_num_seqs": p.Engine.MaxNumSeqs,
			"max_num_batched_tokens": p.Engine.MaxNumBatchedTokens, "gpu_blocks": p.Engine.NumGPUBlocks}
	}
	if cfg.Kind == Colocated {
		out["replicas"] = pool(cfg.Replicas)
	}
	if cfg.Kind == Disaggregated {
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

// roleFlagError restates an engine-flag error with the per-role flag the
// user typed.
type roleFlagError struct {
	msg string
	err error
}

func (e *roleFlagError) Error() string { return e.msg }
func (e *roleFlagError) Unwrap() error { return e.err }
