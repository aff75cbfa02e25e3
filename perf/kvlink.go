package perf

import (
	"fmt"
	"strings"
	"time"
)

// KVLink is the network a KV-transfer connector moves a request's KV cache
// over, from a prefill instance to a decode instance, as seen by one
// tensor-parallel rank (each rank sends its own shard over its own NICs,
// as Mooncake and NIXL do with GPUDirect RDMA).
//
// A transfer of n bytes alone on the link takes Setup + n/(NICs·NICBandwidth):
// the setup term makes small transfers latency-bound, so the effective
// bandwidth n/time grows with n towards the line rate, as Mooncake measured
// (18% of peak at 20 MB, 48% at 146 MB, 71% at 4.5 GB; see KVLinkPresets).
type KVLink struct {
	Name string
	// NICs aggregate: a rank's transfer is striped over all of them
	// (Mooncake's device_name "erdma_0,erdma_1").
	NICs int
	// NICBandwidth is one NIC's sustained rate for large transfers, bytes/s.
	NICBandwidth float64
	// Setup is the fixed cost of one transfer: connection and memory
	// registration, metadata exchange, completion notification.
	Setup time.Duration
}

// KVLinkPresets are the --kv-link presets. Sources (reference file, part B4):
//   - rdma: one 200 Gbps RoCE NIC (ConnectX-7) per GPU. Mooncake's vLLM V1
//     benchmark (docs/source/performance/vllm/vllm-v1-pd-performance.md,
//     H800 TP8, 8×CX-7) moved 146 MB in 1.50 ms and 4.50 GB in 31.65 ms;
//     and 20 MB in 0.54 ms; 144 GB/s over 8 NICs (18 GB/s each) plus 0.45 ms
//     of fixed cost reproduces all three within 10% (the slope through the
//     two large points; the fixed cost splits the small point's error),
//     near llm-d-inference-sim's 0.5–2 ms RDMA setup and "RoCE 200G ≈
//     20 GB/s".
//   - rdma-2nic: the same with two NICs aggregated.
//   - tcp: Mooncake's transfer-engine README measures RDMA 2.4× faster than
//     TCP on the same 4×200 Gbps NICs (87 GB/s RDMA), so ≈ 9 GB/s per NIC,
//     in line with llm-d-inference-sim's "100 GbE ≈ 10 GB/s"; setup 2 ms,
//     the low end of llm-d-inference-sim's TCP 2–10 ms.
//   - nvlink: P and D on one NVLink domain (DistServe's low node-affinity
//     placement): 450 GB/s per direction as for tensor-parallel traffic
//     (perf.Link "nvlink"); the 0.1 ms setup is an assumption (an NCCL
//     send/recv launch plus the connector's bookkeeping), not a measurement.
var KVLinkPresets = []KVLink{
	{Name: "rdma", NICs: 1, NICBandwidth: 18 * gb, Setup: 450 * time.Microsecond},
	{Name: "rdma-2nic", NICs: 2, NICBandwidth: 18 * gb, Setup: 450 * time.Microsecond},
	{Name: "tcp", NICs: 1, NICBandwidth: 9 * gb, Setup: 2 * time.Millisecond},
	{Name: "nvlink", NICs: 1, NICBandwidth: 450 * gb, Setup: 100 * time.Microsecond},
}

// KVLinkNames lists the presets' names.
func KVLinkNames() []string {
	names := make([]string, len(KVLinkPresets))
	for i, l := range KVLinkPresets {
		names[i] = l.Name
	}
	return names
}

// LookupKVLink returns a preset by name.
func LookupKVLink(name string) (KVLink, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	for _, l := range KVLinkPresets {
		if l.Name == key {
			return l, nil
		}
	}
	return KVLink{}, fmt.Errorf("perf: unknown KV link %q; use one of %s", name, strings.Join(KVLinkNames(), ", "))
}

// Validate reports a link that cannot move bytes.
func (l KVLink) Validate() error {
	if l.NICs < 1 {
		return fmt.Errorf("KV link %s: %d NICs; give at least 1", l.Name, l.NICs)
	}
	if !(l.NICBandwidth > 0) {
		return fmt.Errorf("KV link %s: NIC bandwidth %g bytes/s; give a positive rate", l.Name, l.NICBandwidth)
	}
	if l.Setup < 0 {
		return fmt.Errorf("KV link %s: setup %v is negative", l.Name, l.Setup)
	}
	return nil
}

// Bandwidth is the aggregate rate of all NICs, bytes/s.
func (l KVLink) Bandwidth() float64 { return float64(l.NICs) * l.NICBandwidth }

// TransferTime is how long n bytes take when the transfer has the link to
// itself.
func (l KVLink) TransferTime(n int64) time.Duration {
	return l.Setup + time.Duration(float64(n)/l.Bandwidth()*float64(time.Second))
}

// EffectiveBandwidth is n bytes over TransferTime(n), bytes/s: what a
// benchmark that times whole transfers reports.
func (l KVLink) EffectiveBandwidth(n int64) float64 {
	t := l.TransferTime(n).Seconds()
	if t <= 0 {
		return l.Bandwidth()
	}
	return float64(n) / t
}

// KVTransferBytes is what a connector sends for one request of n prompt
// tokens: the KV of every prompt token (the whole model's, all TP ranks
// together) and, for vLLM V0 connectors, the last layer's hidden states.
// Divide by the tensor-parallel size for one rank's share.
func KVTransferBytes(m Model, kvCacheDType string, n int, hiddenStates bool) int64 {
	b := m.KVBytesPerToken(kvCacheDType) * int64(n)
	if hiddenStates {
		b += int64(m.Hidden) * activationBytes * int64(n)
	}
	return b
}
