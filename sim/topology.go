package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/vllm"
	"github.com/servebench/servebench/workload"
)

// TopologyKind is how engine instances serve requests together.
type TopologyKind string

const (
	// Colocated is N identical replicas, each prefilling and decoding its
	// own requests, behind a router.
	Colocated TopologyKind = "colocated"
	// Disaggregated is prefill/decode disaggregation: a prefill pool
	// computes each prompt (max_tokens=1), its KV crosses a KV link, and a
	// decode pool generates the output.
	Disaggregated TopologyKind = "pd"
)

// Pool is a set of identical engine instances.
type Pool struct {
	Instances int
	Engine    engine.Config
	Model     perf.StepModel
	// GPUs is what one instance occupies (TP×PP), for the GPUs-per-arm
	// line every comparison must print.
	GPUs int
	// AsyncOutputLag is V0's async output processing (Config's field of
	// the same name): a colocated replica's tokens go out when its next
	// step ends, or after one more decode of the sequences that just
	// finished when none follows. Without pipeline parallelism only, as
	// in Run; prefill and decode instances ignore it [deviation].
	AsyncOutputLag bool
	// ColdStart: every instance starts with an empty Triton cache
	// (Config's field of the same name); each compiles on its own.
	ColdStart *vllm.ColdStart
}

// Handoff is how the proxy hands a request from prefill to decode.
type Handoff string

const (
	// HandoffSequential is vLLM V0's disagg proxy and the NIXL toy proxy:
	// the prefill request (max_tokens=1) is drained before the decode
	// request is sent, so two proxy hops lie on the critical path.
	HandoffSequential Handoff = "sequential"
	// HandoffConcurrent is P2pNcclConnector's proxy: prefill and decode
	// requests leave together, one hop on the critical path.
	HandoffConcurrent Handoff = "concurrent"
)

// Overflow is what a decode instance does when a request's KV does not fit
// its receive buffer (kv_buffer_size).
type Overflow string

const (
	// OverflowSpill lands the KV in host memory (P2pNccl's host pool); it
	// is copied to the GPU at SpillBandwidth before decode can start.
	OverflowSpill Overflow = "spill"
	// OverflowRecompute drops the KV: decode recomputes the prefill
	// (kv_load_failure_policy=recompute; V0's bypass_model_exec=False).
	OverflowRecompute Overflow = "recompute"
)

// KVTransfer configures the prefill→decode handoff.
type KVTransfer struct {
	Link perf.KVLink
	// BytesPerToken is what the connector sends per prompt token for the
	// whole model (all TP ranks together), hidden states included for V0
	// connectors (perf.KVTransferBytes of one token).
	BytesPerToken int64
	// Ranks is how many parallel streams carry a request's KV: each TP rank
	// sends its shard over its own link (min of the prefill and decode TP).
	Ranks   int
	Handoff Handoff
	// HopCost is the fixed cost of one proxy hop: an HTTP round trip,
	// re-tokenisation, the engine's request setup.
	HopCost time.Duration
	// LayerwiseOverlap sends each layer's KV while the prefill computes the
	// next (vLLM V1 connectors' save_kv_layer); otherwise the KV leaves
	// after the forward pass (V0).
	LayerwiseOverlap bool
	// Layers is the model's layer count (the granularity of the overlap).
	Layers int
	// BufferBytes is each decode rank's receive buffer (kv_buffer_size,
	// vLLM's default 1e9); 0 means unbounded.
	BufferBytes int64
	Overflow    Overflow
	// SpillBandwidth is the host→GPU copy rate for spilled KV, bytes/s
	// (P2pNccl's doc: ≈21 GB/s over PCIe 4.0).
	SpillBandwidth float64
}

// TopologyConfig is a simulated fleet.
type TopologyConfig struct {
	Kind   TopologyKind
	Router RouterPolicy
	// Seed drives the random router; the same seed gives the same run.
	Seed uint64
	// Replicas is the colocated fleet.
	Replicas Pool
	// Prefill and Decode are the disaggregated pools.
	Prefill, Decode Pool
	Transfer        KVTransfer
	// MaxConcurrency caps requests in flight in the whole fleet, as
	// Config.MaxConcurrency does for one engine (0: no cap).
	MaxConcurrency int
	// Ingest and Delivery are the OpenAI server's per-request latencies,
	// as Config's are for one engine: a request reaches the fleet's
	// router Ingest after the client sends it, and every chunk reaches
	// the client Delivery after the step that made it, so one engine and
	// a colocated fleet of one time a request alike.
	Ingest, Delivery time.Duration
	// Client is the benchmark client's thread, as Config.Client is for
	// one engine: with MaxConcurrency a request holds its slot until the
	// thread has processed its last chunk.
	Client ClientCost
	// IngestSpacing is each instance's OpenAI server handing requests to
	// its engine at least this far apart, in the order they reached it
	// (Config.IngestSpacing): a replica's or prefill instance's from the
	// router, a decode instance's from the proxy once the request's KV
	// can be had.
	IngestSpacing time.Duration
	// OnTransfer, if set, is called for each disaggregated request when it
	// finishes, in completion order.
	OnTransfer func(TransferTrace)
	// StatsInterval and OnStats sample every instance as Config's do for
	// one engine (each vLLM process logs its own stats line), in instance
	// order at each instant; the prefix hit rate is cumulative.
	StatsInterval time.Duration
	OnStats       func(InstanceSample)
}

// InstanceSample is one instance's periodic stats sample.
type InstanceSample struct {
	Role  string // "replica", "prefill" or "decode"
	Index int
	StatsSample
}

// TransferTrace is one request's handoff, for tests and analysis.
type TransferTrace struct {
	Index             int   // the workload request's Index
	BytesSent         int64 // all ranks; 0 when recomputed
	BytesReceived     int64
	Spilled           bool
	Recomputed        bool
	PrefillDone       time.Duration // P's step that finished the prompt ended
	KVArrived         time.Duration // the last byte reached D (PrefillDone when recomputed)
	DecodeAdmitted    time.Duration // the request entered D's engine
	DecodeFirstStepAt time.Duration // start of the D step that produced the first token
}

// GPUs is the fleet's GPU count (the arm's cost in a comparison).
func (c TopologyConfig) GPUs() int {
	if c.Kind == Disaggregated {
		return c.Prefill.Instances*max(c.Prefill.GPUs, 1) + c.Decode.Instances*max(c.Decode.GPUs, 1)
	}
	return c.Replicas.Instances * max(c.Replicas.GPUs, 1)
}

// String is the topology line printed with results.
func (c TopologyConfig) String() string {
	if c.Kind == Disaggregated {
		return fmt.Sprintf("pd %dP%dD (prefill tp×pp %d, decode tp×pp %d), router %s, KV link %s, %s handoff, %d GPUs",
			c.Prefill.Instances, c.Decode.Instances, max(c.Prefill.GPUs, 1), max(c.Decode.GPUs, 1), c.Router, c.Transfer.Link.Name, c.Transfer.Handoff, c.GPUs())
	}
	return fmt.Sprintf("colocated, %d replica(s) (tp×pp %d), router %s, %d GPUs", c.Replicas.Instances, max(c.Replicas.GPUs, 1), c.Router, c.GPUs())
}

func (c TopologyConfig) validate() error {
	check := func(name string, p Pool) error {
		if p.Instances < 1 {
			return fmt.Errorf("sim: %s instances %d: give at least 1", name, p.Instances)
		}
		if p.Model == nil {
			return fmt.Errorf("sim: %s pool has no step model", name)
		}
		return nil
	}
	switch c.Kind {
	case Colocated:
		return check("replica", c.Replicas)
	case Disaggregated:
		if err := check("prefill", c.Prefill); err != nil {
			return err
		}
		if err := check("decode", c.Decode); err != nil {
			return err
		}
		t := c.Transfer
		if err := t.Link.Validate(); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		if t.BytesPerToken <= 0 || t.Ranks < 1 {
			return fmt.Errorf("sim: KV transfer needs positive bytes per token (%d) and ranks (%d)", t.BytesPerToken, t.Ranks)
		}
		if t.Handoff != HandoffSequential && t.Handoff != HandoffConcurrent {
			return fmt.Errorf("sim: handoff %q; use %q or %q", t.Handoff, HandoffSequential, HandoffConcurrent)
		}
		if t.Overflow != OverflowSpill && t.Overflow != OverflowRecompute {
			return fmt.Errorf("sim: KV buffer overflow policy %q; use %q or %q", t.Overflow, OverflowSpill, OverflowRecompute)
		}
		if t.Overflow == OverflowSpill && t.BufferBytes > 0 && !(t.SpillBandwidth > 0) {
			return errors.New("sim: spilling KV needs a positive host-to-GPU bandwidth")
		}
		return nil
	}
	return fmt.Errorf("sim: topology %q; use %q or %q", c.Kind, Colocated, Disaggregated)
}

// TopologyResult summarises a fleet simulation; records go to emit.
type TopologyResult struct {
	Duration  time.Duration
	Instances []InstanceResult
	// PrefixQueries and PrefixHits are summed over the instances that
	// compute prompts (all replicas, or the prefill pool).
	PrefixQueries, PrefixHits int64
	Transfers                 TransferStats
}

// InstanceResult is one engine instance's totals.
type InstanceResult struct {
	Role       string // "replica", "prefill" or "decode"
	Index      int
	Requests   int // routed to it
	Engine     engine.Stats
	MaxKVUsage float64
}

// TransferStats summarise the KV handoffs.
type TransferStats struct {
	Count, Spilled, Recomputed int
	BytesSent, BytesReceived   int64
	// Mean, Median and P99 are from the end of prefill to the last byte's
	// arrival (setup, queueing for the link and the bytes).
	Mean, Median, P99 time.Duration
	MaxBufferBytes    int64 // the fullest any decode rank's buffer got
}

// RunTopology simulates reqs on a fleet of engine instances sharing one
// virtual clock: each instance steps on its own (the next event is
// whichever instance's step ends first, a KV transfer completes or a
// request arrives). Records are as Run's; a disaggregated request's TTFT
// runs from its arrival to the decode instance's first token, so it
// includes proxy hops, the prefill queue and step, the transfer and the
// decode admission. Deterministic: the same input and Seed give the same
// records and result.
//
// A remote request enters the decode engine with its prompt computed
// (engine.Request.RemotePromptTokens): under V1 it costs the token budget
// and the step one token, as vLLM V1's connectors report the transferred
// tokens computed; under V0 the whole prompt counts against
// max_num_batched_tokens, as in vLLM V0, and is timed as one token
// (perf.RemoteKV).
//
// Deviations (documented, not hidden): under V0 a decode-side recompute
// preemption is timed as cheaply as the remote prompt; OverflowRecompute charges
// the recomputed prefill to the request alone (its isolated prefill time)
// rather than to the decode batch; colocated routing costs no proxy hop.
func RunTopology(ctx context.Context, cfg TopologyConfig, reqs []workload.Request, emit func(*metrics.Record) error) (*TopologyResult, error) {
	return RunTopologyStream(ctx, cfg, workload.StreamOf(reqs), emit)
}

// RunTopologyStream is RunTopology over requests taken one at a time from
// a stream in arrival order (workload.NewStream generates each as it is
// taken), so memory follows the requests in flight, not the workload's
// size. A request's PromptIDs go back to the stream (Recycle) when it
// leaves the fleet.
func RunTopologyStream(ctx context.Context, cfg TopologyConfig, reqs *workload.Stream, emit func(*metrics.Record) error) (*TopologyResult, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if emit == nil {
		emit = func(*metrics.Record) error { return nil }
	}
	t := &fleet{cfg: cfg, reqs: reqs, emit: emit}
	t.client = newClientThread(cfg.Client, cfg.MaxConcurrency)
	var err error
	if cfg.Kind == Colocated {
		if t.front, err = newInstances("replica", cfg.Replicas, false); err != nil {
			return nil, err
		}
	} else {
		if t.front, err = newInstances("prefill", cfg.Prefill, false); err != nil {
			return nil, err
		}
		if t.back, err = newInstances("decode", cfg.Decode, true); err != nil {
			return nil, err
		}
		t.backRouter = newRouter(cfg.Router, t.back, cfg.Seed+1)
		t.bufferUsed = make([]int64, len(t.back))
		t.sending = make([]int, len(t.front))
		t.receiving = make([]int, len(t.back))
	}
	if cfg.Delivery > 0 {
		// Each replica and decode instance streams through its own API
		// server, on the chunks' way to the client (Run's outLoop; a
		// prefill instance answers the proxy, whose wait on it is not
		// modelled).
		for _, in := range append(slices.Clip(t.front), t.back...) {
			if in.role != "prefill" {
				in.outLoop = perf.NewOutputLoop(in.model)
			}
		}
	}
	t.frontRouter = newRouter(cfg.Router, t.front, cfg.Seed)
	if err := t.run(ctx); err != nil {
		return nil, err
	}
	return t.result(), nil
}

type instance struct {
	role    string
	index   int
	eng     *engine.Engine
	model   perf.StepModel
	jit     *vllm.JITCache // Pool.ColdStart's compiled kernels, this instance's
	kicked  bool           // a kick event is pending
	started time.Duration  // when the step being completed was scheduled
	// Steps in flight, oldest first: one, or with pipeline parallelism up
	// to one per stage (engine.MaxBatches), timed through pipe.
	inPipe         []instanceBatch
	depth          int
	pipe           perf.Pipeline
	virtualEngines bool          // V0 with PP: a free virtual engine takes arrivals at once
	held           []heldRequest // arrivals while every virtual engine was busy
	stepped        bool          // a batch returned since the last kick
	// Async output processing (Pool.AsyncOutputLag): lagged holds the
	// last step's outputs until the next step (or the drain step, a
	// batch with no engine step) ends; lagging says they are pending.
	lag     bool
	lagged  []engine.Output
	lagging bool
	// outLoop is the instance's API server's event loop (with Delivery);
	// laggedLoop its work on the lagged outputs.
	outLoop    perf.OutputLoop
	laggedLoop perf.OutputWork
	// lastAdded is when the last request handed to this instance reached
	// its engine (TopologyConfig.IngestSpacing).
	lastAdded time.Duration
	load      int // requests routed here and not finished
	routed    int
	maxKV     float64
}

func newInstances(role string, p Pool, remoteKV bool) ([]*instance, error) {
	out := make([]*instance, p.Instances)
	for i := range out {
		eng, err := engine.New(p.Engine)
		if err != nil {
			return nil, fmt.Errorf("sim: %s engine config: %w", role, err)
		}
		depth := eng.MaxBatches()
		model := p.Model
		if remoteKV && p.Engine.Version == engine.V0 {
			model = perf.RemoteKV{Inner: p.Model, Stages: depth}
		}
		out[i] = &instance{role: role, index: i, eng: eng, model: model, depth: depth, jit: p.ColdStart.NewCache(),
			virtualEngines: depth > 1 && p.Engine.Version == engine.V0,
			lag:            p.AsyncOutputLag && depth == 1 && role == "replica",
			lastAdded:      math.MinInt64 / 2}
	}
	return out, nil
}

// flight is one request in the fleet.
type flight struct {
	rec *metrics.Record
	ids []int32 // nil when prefix caching is off everywhere
	// streamIDs: ids are the stream's, given back when the request leaves.
	streamIDs    bool
	front, back  int     // instance indexes
	onBack       bool    // the decode instance owns it now
	kvBytes      int64   // per rank
	delivered    float64 // per rank
	buffered     bool
	trace        TransferTrace
	firstDecoded bool
}

type eventKind uint8

// Event classes at one instant, in processing order: a step that ends is
// completed before anything new is added, and instances are scheduled
// last, once everything due at that instant has arrived (as Run does).
const (
	evStepEnd eventKind = iota
	evLink
	evDispatch
	// evSpacedAdd: a request reaches an instance's engine after its
	// server's spacing (TopologyConfig.IngestSpacing); back says which
	// pool.
	evSpacedAdd
	evDecodeReady
	evKick
	// evClientChunks: the chunks that reach the timed client thread at
	// an instant, once every event that makes them is processed
	// (TopologyConfig.Client).
	evClientChunks
	// evRelease: the client receives a request's last chunk (Delivery
	// after its step) and frees its concurrency slot.
	evRelease
)

type event struct {
	at   time.Duration
	kind eventKind
	seq  uint64
	id   int // instance index (step end, kick) or request (dispatch, ready)
	back bool
	ver  uint64 // link events: stale unless equal to the link version
}

func (a event) before(b event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.seq < b.seq
}

type eventQueue []event

func (q *eventQueue) push(e event) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *eventQueue) pop() event {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].before(h[m]) {
			m = l
		}
		if r < len(h) && h[r].before(h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

// transfer is one request's KV on the link, per rank.
type transfer struct {
	req        int
	src, dst   int
	setupUntil time.Duration
	rate       float64 // bytes/s while in the byte phase
}

type fleet struct {
	cfg         TopologyConfig
	reqs        *workload.Stream
	emit        func(*metrics.Record) error
	front, back []*instance
	frontRouter *router
	backRouter  *router
	flights     flightWindow

	queue eventQueue
	seq   uint64
	// inFlight and slotFreedAt implement MaxConcurrency as Run does.
	inFlight    int
	slotFreedAt time.Duration
	// client is the benchmark client's thread (TopologyConfig.Client,
	// with a cap): each of its batches has an evClientChunks event.
	client clientThread

	now time.Duration
	// outAt is when the chunks the event being processed made go out, and
	// firstAt its first tokens: now, or later behind an instance's API
	// server (perf.OutputLoop).
	outAt, firstAt time.Duration
	start          time.Duration
	end            time.Duration

	active     []*transfer
	linkAt     time.Duration // when active transfers' progress was last credited
	linkVer    uint64
	sending    []int // byte-phase transfers per prefill instance
	receiving  []int // per decode instance
	bufferUsed []int64
	maxBuffer  int64
	stats      TransferStats
	times      []time.Duration

	nextSample  time.Duration
	lastSampled time.Duration
	sampled     []engine.Stats // per instance, front then back
}

// flightWindow holds the flights of requests base, base+1, ... (by
// arrival position, the engine request ID), from the oldest still in the
// fleet to the newest: memory follows what is in flight, not the workload.
type flightWindow struct {
	base int
	live []*flight
}

func (w *flightWindow) at(i int) *flight {
	if i < w.base || i >= w.base+len(w.live) {
		return nil
	}
	return w.live[i-w.base]
}

// add holds the flight of the request after the newest.
func (w *flightWindow) add(f *flight) { w.live = append(w.live, f) }

func (w *flightWindow) remove(i int) {
	w.live[i-w.base] = nil
	for len(w.live) > 0 && w.live[0] == nil {
		w.live = w.live[1:]
		w.base++
	}
}

func (t *fleet) push(e event) {
	t.seq++
	e.seq = t.seq
	t.queue.push(e)
}

func (t *fleet) run(ctx context.Context) error {
	next := t.reqs.Peek()
	if next == nil {
		return nil
	}
	t.start, t.end = next.Arrival, next.Arrival
	t.nextSample, t.lastSampled = t.start+t.cfg.StatsInterval, t.start
	for iter := 0; ; iter++ {
		if iter%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("sim: stopped at virtual time %v: %w", t.now-t.start, err)
			}
		}
		if t.client.on {
			t.toClientThread()
		}
		// Arrivals come before kicks at the same instant and after step
		// ends and dispatches, like the class order of events.
		if next != nil && !t.full() {
			// A request held by the concurrency cap starts when a slot frees.
			at := max(next.Arrival, t.slotFreedAt)
			if len(t.queue) == 0 || t.arrivalFirst(at) {
				t.sampleBefore(at)
				t.now, t.outAt, t.firstAt = at, at, at
				if err := t.arrive(t.reqs.Next()); err != nil {
					return err
				}
				next = t.reqs.Peek()
				continue
			}
		}
		if len(t.queue) == 0 {
			break
		}
		e := t.queue.pop()
		t.sampleBefore(e.at)
		t.now, t.outAt, t.firstAt = e.at, e.at, e.at
		var err error
		switch e.kind {
		case evStepEnd:
			err = t.stepEnd(t.pool(e.back)[e.id])
		case evLink:
			if e.ver == t.linkVer {
				err = t.linkEvent()
			}
		case evDispatch:
			err = t.dispatchFront(e.id)
		case evSpacedAdd:
			if e.back {
				err = t.addBack(e.id)
			} else {
				err = t.addFront(e.id)
			}
		case evDecodeReady:
			err = t.admitBack(e.id)
		case evKick:
			err = t.kick(t.pool(e.back)[e.id])
		case evClientChunks:
			t.clientChunks()
		case evRelease:
			t.release()
		}
		if err != nil {
			return err
		}
	}
	t.sampleBefore(t.end + 1)
	for _, in := range append(slices.Clip(t.front), t.back...) {
		if !in.eng.Idle() && in.eng.Err() == nil {
			s := in.eng.Stats()
			return fmt.Errorf("sim: %s instance %d stalled at virtual time %v with %d running, %d waiting (a simulator bug)",
				in.role, in.index, t.now-t.start, s.Running, s.Waiting)
		}
	}
	return nil
}

// arrivalFirst reports whether an arrival at a is processed before the
// queue's next event: arrivals go after step ends, link events and
// dispatches at the same instant and before kicks.
// sampleBefore takes the periodic samples due strictly before at (a
// sample at instant b sees every step that ended at or before b).
func (t *fleet) sampleBefore(at time.Duration) {
	if t.cfg.StatsInterval <= 0 || t.cfg.OnStats == nil {
		return
	}
	all := append(slices.Clip(t.front), t.back...)
	if t.sampled == nil {
		t.sampled = make([]engine.Stats, len(all))
	}
	for t.nextSample < at {
		secs := (t.nextSample - t.lastSampled).Seconds()
		for i, in := range all {
			s := in.eng.Stats()
			prev := t.sampled[i]
			t.sampled[i] = s
			t.cfg.OnStats(InstanceSample{Role: in.role, Index: in.index, StatsSample: StatsSample{
				At: t.nextSample, Stats: s, KVUsage: in.eng.KVUsage(),
				PromptThroughput:     float64(s.PromptTokens-prev.PromptTokens) / secs,
				GenerationThroughput: float64(s.GenerationTokens-prev.GenerationTokens) / secs,
				PrefixHitRate:        ratio(s.PrefixHits, s.PrefixQueries),
			}})
		}
		t.lastSampled = t.nextSample
		t.nextSample += t.cfg.StatsInterval
	}
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func (t *fleet) arrivalFirst(a time.Duration) bool {
	top := t.queue[0]
	if a != top.at {
		return a < top.at
	}
	// A send at an instant reaches the client thread before the chunks
	// (ApplyClient's order).
	return top.kind == evKick || top.kind == evDecodeReady || top.kind == evClientChunks
}

func (t *fleet) full() bool {
	return t.cfg.MaxConcurrency > 0 && t.inFlight >= t.cfg.MaxConcurrency
}

func (t *fleet) pool(back bool) []*instance {
	if back {
		return t.back
	}
	return t.front
}

func (t *fleet) arrive(w *workload.Request) error {
	i := t.flights.base + len(t.flights.live)
	f := &flight{rec: &metrics.Record{
		Index: w.Index, Scheduled: w.Arrival, Dispatched: w.Arrival, Start: t.now, MaxTokens: w.MaxTokens,
	}}
	t.inFlight++
	if t.client.on {
		t.client.send(t.now)
	}
	switch {
	case w.PromptIDs != nil:
		f.ids, f.streamIDs = w.PromptIDs, true
	case w.Prompt != "" && (t.prefixCaching() || t.cfg.Router == RoutePrefixAware):
		f.ids = DerivePromptIDs(w.Prompt, w.PromptLen)
	}
	f.rec.PromptLen = w.PromptLen
	if f.ids != nil {
		f.rec.PromptLen = len(f.ids)
	} else if f.rec.PromptLen <= 0 && w.Prompt != "" {
		f.rec.PromptLen = len(DerivePromptIDs(w.Prompt, 0))
	}
	f.trace.Index = w.Index
	t.flights.add(f)
	wait := t.cfg.Ingest
	if t.cfg.Kind == Disaggregated {
		wait += t.cfg.Transfer.HopCost
	}
	if wait > 0 {
		t.push(event{at: t.now + wait, kind: evDispatch, id: i})
		return nil
	}
	return t.dispatchFront(i)
}

func (t *fleet) prefixCaching() bool {
	if t.cfg.Kind == Disaggregated {
		return t.cfg.Prefill.Engine.EnablePrefixCaching || t.cfg.Decode.Engine.EnablePrefixCaching
	}
	return t.cfg.Replicas.Engine.EnablePrefixCaching
}

func (t *fleet) engineRequest(i int, maxTokens int) engine.Request {
	f := t.flights.at(i)
	er := engine.Request{ID: uint64(i), MaxTokens: maxTokens, Arrival: f.rec.Start}
	if f.ids != nil {
		er.Prompt = f.ids
	} else {
		er.PromptLen = f.rec.PromptLen
	}
	return er
}

// dispatchFront routes a request to a replica or prefill instance.
func (t *fleet) dispatchFront(i int) error {
	f := t.flights.at(i)
	f.front = t.frontRouter.pick(t.front, f.ids)
	in := t.front[f.front]
	in.load++
	in.routed++
	if t.spaced(in, i, false) {
		return nil
	}
	return t.addFront(i)
}

// spaced holds request i until in's server has handed on the requests
// before it, IngestSpacing apart, and reports whether it did (an
// evSpacedAdd then adds it).
func (t *fleet) spaced(in *instance, i int, back bool) bool {
	if t.cfg.IngestSpacing <= 0 {
		return false
	}
	at := max(t.now, in.lastAdded+t.cfg.IngestSpacing)
	in.lastAdded = at
	if at == t.now {
		return false
	}
	t.push(event{at: at, kind: evSpacedAdd, id: i, back: back})
	return true
}

// addFront adds a routed request to its front instance's engine.
func (t *fleet) addFront(i int) error {
	f := t.flights.at(i)
	in := t.front[f.front]
	maxTokens := f.rec.MaxTokens
	if t.cfg.Kind == Disaggregated {
		maxTokens = 1 // the proxy's prefill request
	}
	if in.virtualEngines && len(in.inPipe) >= in.depth {
		// Every V0 virtual engine has a batch in flight: vLLM adds the
		// request when the next one returns, to the engine with the
		// fewest unfinished requests then (as Run does).
		in.held = append(in.held, heldRequest{i, t.engineRequest(i, maxTokens)})
		return nil
	}
	if err := in.eng.Add(t.engineRequest(i, maxTokens)); err != nil {
		return t.fail(i, err.Error())
	}
	t.wake(in, false)
	return nil
}

type heldRequest struct {
	flight int
	req    engine.Request
}

type instanceBatch struct {
	st    *engine.Step
	start time.Duration
	loop  perf.OutputWork // the API server's work on its outputs
}

// canSchedule reports whether the instance would schedule now: it has a
// free pipeline slot, and unless a batch just returned, V1's engine core
// is not waiting on a batch.
func (in *instance) canSchedule() bool {
	n := len(in.inPipe)
	return n == 0 || n < in.depth && (in.virtualEngines || in.stepped)
}

// wake makes sure an instance schedules at the current instant.
func (t *fleet) wake(in *instance, back bool) {
	if !in.canSchedule() || in.kicked {
		return
	}
	in.kicked = true
	t.push(event{at: t.now, kind: evKick, id: in.index, back: back})
}

func (t *fleet) kick(in *instance) error {
	in.kicked, in.stepped = false, false
	for len(in.inPipe) < in.depth {
		st := in.eng.Schedule(t.now)
		in.maxKV = max(in.maxKV, in.eng.KVUsage())
		for i := range st.Rejected {
			if err := t.output(in, &st.Rejected[i]); err != nil {
				return err
			}
		}
		if st.Empty() {
			if in.lagging && len(in.inPipe) == 0 {
				// No step follows: vLLM runs the sequences that just
				// finished once more while it processes their outputs,
				// then returns them (Run's drain step).
				in.inPipe = append(in.inPipe, instanceBatch{st: nil, start: t.now})
				t.push(event{at: t.now + t.drainStep(in), kind: evStepEnd, id: in.index, back: in.role == "decode"})
			}
			return nil
		}
		in.inPipe = append(in.inPipe, instanceBatch{st, t.now, in.outLoop.Work(st.Shape)})
		d := max(in.model.StepTime(st.Shape), 0) + in.jit.Compile(st.Shape)
		out := t.now + d
		if in.depth > 1 {
			out = in.pipe.Enter(t.now, d, perf.StageTime(in.model, st.Shape, in.depth))
		}
		t.push(event{at: out, kind: evStepEnd, id: in.index, back: in.role == "decode"})
	}
	return nil
}

func (t *fleet) stepEnd(in *instance) error {
	head := in.inPipe[0]
	in.inPipe = append(in.inPipe[:0], in.inPipe[1:]...)
	in.started = head.start
	switch {
	case head.st == nil: // the drain step
		if err := t.deliverLagged(in); err != nil {
			return err
		}
	case in.lag:
		// The previous step's outputs go out as this one ends; this
		// step's wait for the next.
		if err := t.deliverLagged(in); err != nil {
			return err
		}
		in.lagged = append(in.lagged[:0], in.eng.Complete(head.st)...)
		in.laggedLoop = head.loop
		in.lagging = true
	default:
		outs := in.eng.Complete(head.st)
		t.outAt, t.firstAt = in.outLoop.Through(t.now, head.loop)
		for i := range outs {
			if err := t.output(in, &outs[i]); err != nil {
				return err
			}
		}
	}
	if t.client.on {
		t.toClientThread() // at outAt and firstAt, which go back to now below
	}
	t.outAt, t.firstAt = t.now, t.now
	for k, h := range in.held {
		in.held[k] = heldRequest{}
		if err := in.eng.Add(h.req); err != nil {
			if err := t.fail(h.flight, err.Error()); err != nil {
				return err
			}
		}
	}
	in.held = in.held[:0]
	// A returned batch frees a slot, and every engine schedules then.
	in.stepped = true
	t.wake(in, in.role == "decode")
	return nil
}

// deliverLagged hands on an instance's lagged outputs now.
func (t *fleet) deliverLagged(in *instance) error {
	if !in.lagging {
		return nil
	}
	in.lagging = false
	t.outAt, t.firstAt = in.outLoop.Through(t.now, in.laggedLoop)
	for i := range in.lagged {
		if err := t.output(in, &in.lagged[i]); err != nil {
			return err
		}
	}
	return nil
}

// drainStep is the extra decode of the sequences whose lagged outputs
// finished them (engine.FinishedDecodes, as Run's runner).
func (t *fleet) drainStep(in *instance) time.Duration {
	s := engine.FinishedDecodes(in.lagged, func(id uint64) (int, bool) {
		if f := t.flights.at(int(id)); f != nil {
			return f.rec.PromptLen, true
		}
		return 0, false
	})
	if s.Decodes == 0 {
		return 0
	}
	return max(in.model.StepTime(s), 0)
}

func (t *fleet) output(in *instance, o *engine.Output) error {
	i := int(o.ID)
	f := t.flights.at(i)
	if f == nil {
		return nil
	}
	if t.cfg.Kind == Disaggregated && !f.onBack {
		return t.prefillOutput(in, i, o)
	}
	rec := f.rec
	out, first := t.outAt, false // when this output's chunk goes out
	if o.NewTokens > 0 {
		if first = rec.OutputLen == 0; first {
			out = t.firstAt
			t.client.firstChunks++
		} else {
			t.client.chunks++
		}
		received := out + t.cfg.Delivery
		if rec.OutputLen == 0 {
			rec.TTFT = received - rec.Start
			if rec.MaxTokens > 1 {
				rec.ITL = make([]time.Duration, 0, rec.MaxTokens-1)
			}
		} else {
			rec.ITL = append(rec.ITL, received-(rec.Start+rec.Latency))
		}
		rec.Latency = received - rec.Start
		rec.OutputLen = o.NumGenerated
	}
	if f.onBack && !f.firstDecoded && (o.NewTokens > 0 || o.Finished) {
		// Admitted and loaded: the KV left the receive buffer.
		f.firstDecoded = true
		if o.NewTokens > 0 {
			f.trace.DecodeFirstStepAt = in.started
		}
		t.releaseBuffer(i)
	}
	if !f.onBack && o.CachedTokens > 0 {
		rec.CachedTokens = o.CachedTokens
	}
	if !o.Finished {
		return nil
	}
	in.load--
	if o.Err != nil {
		rec.Error = o.Err.Error()
		rec.Latency = t.now - rec.Start
		rec.OutputLen = o.NumGenerated
	} else {
		rec.Success = true
	}
	if f.onBack && t.cfg.OnTransfer != nil {
		t.cfg.OnTransfer(f.trace)
	}
	return t.done(i, out, first)
}

// done ends request i, whose last chunk (or error) goes out at out, its
// first token if first.
func (t *fleet) done(i int, out time.Duration, first bool) error {
	f := t.flights.at(i)
	rec := f.rec
	if f.streamIDs {
		// Every engine has released the request, and with it the prompt.
		t.reqs.Recycle(f.ids)
	}
	t.flights.remove(i)
	switch {
	case t.client.on && first:
		t.client.firstFinished++
	case t.client.on:
		t.client.finished++
	case t.cfg.Delivery > 0:
		t.push(event{at: out + t.cfg.Delivery, kind: evRelease})
	default:
		t.release()
	}
	t.end = max(t.end, out+t.cfg.Delivery)
	if err := t.emit(rec); err != nil {
		return fmt.Errorf("sim: emitting record %d: %w", rec.Index, err)
	}
	return nil
}

// toClientThread hands the client thread what the last event made,
// Delivery after it.
func (t *fleet) toClientThread() {
	at := t.outAt + t.cfg.Delivery
	if t.client.hand(at) {
		t.push(event{at: at, kind: evClientChunks})
	}
	at = t.firstAt + t.cfg.Delivery
	if t.client.handFirst(at) {
		t.push(event{at: at, kind: evClientChunks})
	}
}

// clientChunks runs the client thread through the chunks that reach it
// now; the requests they finished free their slots when it is through
// them all.
func (t *fleet) clientChunks() {
	done, finished := t.client.process()
	for range finished {
		t.push(event{at: done, kind: evRelease})
	}
}

// release frees the concurrency slot of a request whose last chunk the
// client has received.
func (t *fleet) release() {
	if t.full() {
		t.slotFreedAt = t.now
	}
	t.inFlight--
}

func (t *fleet) fail(i int, msg string) error {
	rec := t.flights.at(i).rec
	rec.Error = msg
	rec.Latency = t.now - rec.Start
	return t.done(i, t.now, false)
}

// prefillOutput handles the prefill request's only output: the prompt is
// computed, so the KV leaves for a decode instance.
func (t *fleet) prefillOutput(in *instance, i int, o *engine.Output) error {
	f := t.flights.at(i)
	if o.CachedTokens > 0 {
		f.rec.CachedTokens = o.CachedTokens
	}
	if !o.Finished {
		return nil
	}
	in.load--
	if o.Err != nil {
		return t.fail(i, o.Err.Error())
	}
	f.trace.PrefillDone = t.now
	f.back = t.backRouter.pick(t.back, f.ids)
	t.back[f.back].load++
	t.back[f.back].routed++
	tc := t.cfg.Transfer
	perRank := tc.BytesPerToken * int64(f.rec.PromptLen) / int64(tc.Ranks)
	if tc.BufferBytes > 0 && t.bufferUsed[f.back]+perRank > tc.BufferBytes {
		if tc.Overflow == OverflowRecompute {
			f.trace.Recomputed = true
			f.trace.KVArrived = t.now
			t.stats.Recomputed++
			d := t.cfg.Decode.Model.StepTime(prefillShape(f.rec.PromptLen))
			return t.scheduleBack(i, t.now+d)
		}
		f.trace.Spilled = true
		t.stats.Spilled++
	} else if tc.BufferBytes > 0 {
		f.buffered = true
		t.bufferUsed[f.back] += perRank
		t.maxBuffer = max(t.maxBuffer, t.bufferUsed[f.back])
	}
	f.kvBytes = perRank
	f.trace.BytesSent = perRank * int64(tc.Ranks)
	t.stats.BytesSent += f.trace.BytesSent
	t.credit()
	tr := &transfer{req: i, src: f.front, dst: f.back, setupUntil: t.now + tc.Link.Setup}
	if tc.LayerwiseOverlap {
		// Layers already computed in this step were sent while the next
		// ones ran: the step's length beyond the setup hides bytes, all but
		// the last layer's at most.
		stepDur := t.now - in.started
		bytesTime := float64(perRank) / tc.Link.Bandwidth()
		hidden := 0.0
		if bytesTime > 0 && stepDur > tc.Link.Setup {
			hidden = min((stepDur-tc.Link.Setup).Seconds()/bytesTime, 1-1/float64(max(tc.Layers, 1)))
		}
		f.delivered = hidden * float64(perRank)
		tr.setupUntil = max(in.started+tc.Link.Setup, t.now)
	}
	t.active = append(t.active, tr)
	t.reshare()
	return nil
}

func prefillShape(n int) perf.StepShape {
	return perf.StepShape{PrefillTokens: n, Prefills: 1, PrefillsDone: 1, AttnPairs: int64(n) * int64(n+1) / 2, KVTokens: int64(n)}
}

// credit adds each byte-phase transfer's progress since the last credit.
func (t *fleet) credit() {
	for _, tr := range t.active {
		from := max(t.linkAt, tr.setupUntil)
		if t.now > from && tr.rate > 0 {
			f := t.flights.at(tr.req)
			f.delivered = min(float64(f.kvBytes), f.delivered+tr.rate*(t.now-from).Seconds())
		}
	}
	t.linkAt = t.now
}

// reshare gives every transfer past its setup an equal share of its
// sender's and its receiver's NICs (the smaller of the two), and schedules
// the next instant a transfer finishes or its setup ends.
func (t *fleet) reshare() {
	clear(t.sending)
	clear(t.receiving)
	for _, tr := range t.active {
		if tr.setupUntil <= t.now {
			t.sending[tr.src]++
			t.receiving[tr.dst]++
		}
	}
	bw := t.cfg.Transfer.Link.Bandwidth()
	nextAt := time.Duration(math.MaxInt64)
	for _, tr := range t.active {
		if tr.setupUntil > t.now {
			tr.rate = 0
			nextAt = min(nextAt, tr.setupUntil)
			continue
		}
		tr.rate = bw / float64(max(t.sending[tr.src], t.receiving[tr.dst]))
		f := t.flights.at(tr.req)
		left := float64(f.kvBytes) - f.delivered
		nextAt = min(nextAt, t.now+time.Duration(math.Ceil(left/tr.rate*1e9)))
	}
	t.linkVer++
	if len(t.active) > 0 {
		t.push(event{at: nextAt, kind: evLink, ver: t.linkVer})
	}
}

// linkEvent finishes the transfers whose last byte has arrived.
func (t *fleet) linkEvent() error {
	t.credit()
	kept := t.active[:0]
	var arrived []int
	for _, tr := range t.active {
		f := t.flights.at(tr.req)
		if tr.setupUntil <= t.now && float64(f.kvBytes)-f.delivered < 0.5 {
			arrived = append(arrived, tr.req)
			continue
		}
		kept = append(kept, tr)
	}
	clear(t.active[len(kept):])
	t.active = kept
	t.reshare()
	for _, i := range arrived {
		f := t.flights.at(i)
		f.trace.KVArrived = t.now
		f.trace.BytesReceived = int64(math.Round(f.delivered)) * int64(t.cfg.Transfer.Ranks)
		t.stats.BytesReceived += f.trace.BytesReceived
		t.times = append(t.times, t.now-f.trace.PrefillDone)
		ready := t.now
		if f.trace.Spilled {
			ready += time.Duration(float64(f.kvBytes) / t.cfg.Transfer.SpillBandwidth * 1e9)
		}
		if err := t.scheduleBack(i, ready); err != nil {
			return err
		}
	}
	return nil
}

// scheduleBack hands the request to its decode instance at ready, or once
// the proxy's decode request is there (sequential: one more hop after the
// prefill finished).
func (t *fleet) scheduleBack(i int, ready time.Duration) error {
	f := t.flights.at(i)
	tc := t.cfg.Transfer
	if tc.Handoff == HandoffSequential {
		ready = max(ready, f.trace.PrefillDone+tc.HopCost)
	}
	t.push(event{at: ready, kind: evDecodeReady, id: i})
	return nil
}

// admitBack hands a request whose KV can be had to its decode instance's
// server.
func (t *fleet) admitBack(i int) error {
	if t.spaced(t.back[t.flights.at(i).back], i, true) {
		return nil
	}
	return t.addBack(i)
}

// addBack adds a request to its decode instance's engine.
func (t *fleet) addBack(i int) error {
	f := t.flights.at(i)
	in := t.back[f.back]
	f.onBack = true
	f.trace.DecodeAdmitted = t.now
	er := t.engineRequest(i, f.rec.MaxTokens)
	er.RemotePromptTokens = f.rec.PromptLen
	if err := in.eng.Add(er); err != nil {
		in.load--
		t.releaseBuffer(i)
		return t.fail(i, err.Error())
	}
	t.wake(in, true)
	return nil
}

func (t *fleet) releaseBuffer(i int) {
	f := t.flights.at(i)
	if f.buffered {
		f.buffered = false
		t.bufferUsed[f.back] -= f.kvBytes
	}
}

func (t *fleet) result() *TopologyResult {
	res := &TopologyResult{Duration: t.end - t.start}
	for _, in := range append(slices.Clip(t.front), t.back...) {
		s := in.eng.Stats()
		res.Instances = append(res.Instances, InstanceResult{Role: in.role, Index: in.index, Requests: in.routed, Engine: s, MaxKVUsage: in.maxKV})
		if in.role != "decode" {
			res.PrefixQueries += s.PrefixQueries
			res.PrefixHits += s.PrefixHits
		}
	}
	st := t.stats
	st.Count = len(t.times)
	st.MaxBufferBytes = t.maxBuffer
	if len(t.times) > 0 {
		slices.Sort(t.times)
		var sum time.Duration
		for _, d := range t.times {
			sum += d
		}
		st.Mean = sum / time.Duration(len(t.times))
		st.Median = percentileDuration(t.times, 0.5)
		st.P99 = percentileDuration(t.times, 0.99)
	}
	res.Transfers = st
	return res
}

// percentileDuration is numpy's linear percentile of sorted durations.
func percentileDuration(sorted []time.Duration, p float64) time.Duration {
	h := float64(len(sorted)-1) * p
	lo := int(h)
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + time.Duration((h-float64(lo))*float64(sorted[lo+1]-sorted[lo]))
}

// Summary lines for a result: one per pool, prefix hits and transfers.
func (r *TopologyResult) Lines() []string {
	var lines []string
	for _, in := range r.Instances {
		lines = append(lines, fmt.Sprintf("%s %d: %d requests, %d steps, %d preemptions, max KV usage %.1f%%",
			in.Role, in.Index, in.Requests, in.Engine.Steps, in.Engine.Preemptions, 100*in.MaxKVUsage))
	}
	if tr := r.Transfers; tr.Count+tr.Recomputed > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "KV transfers: %d (%.1f MiB sent), per request mean %.2f ms, median %.2f ms, P99 %.2f ms",
			tr.Count, float64(tr.BytesSent)/(1<<20), ms(tr.Mean), ms(tr.Median), ms(tr.P99))
		if tr.Spilled+tr.Recomputed > 0 {
			fmt.Fprintf(&b, "; buffer overflows: %d spilled, %d recomputed", tr.Spilled, tr.Recomputed)
		}
		lines = append(lines, b.String())
	}
	return lines
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
