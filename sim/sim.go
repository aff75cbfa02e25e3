// Package sim predicts how vLLM serves a workload without a GPU: it drives
// the engine's scheduler on a virtual clock, timing each step with a
// perf.StepModel, and turns what happens into the same per-request records a
// benchmark run measures.
package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/vllm"
	"github.com/servebench/servebench/workload"
)

// Config is one simulated deployment.
type Config struct {
	Engine engine.Config
	Model  perf.StepModel
	// StatsInterval is the virtual time between periodic stats samples
	// (vLLM logs every 5 s in V0, 10 s in V1); 0 takes none.
	StatsInterval time.Duration
	// OnStats, if set, is called with every periodic sample, in order.
	OnStats func(StatsSample)
	// ReuseRecords promises that emit keeps neither the record nor its ITL
	// slice after it returns, so the simulator recycles them instead of
	// allocating per request (one ITL slice per request is most of a long
	// simulation's garbage).
	ReuseRecords bool
	// MaxConcurrency caps requests in flight as bench's --max-concurrency
	// does (0: no cap): a request arriving while the cap is full waits in
	// the client queue until one finishes, and the wait is its queue time.
	MaxConcurrency int
	// Client is the CPU of the benchmark client's one thread (ClientCost;
	// zero: none). With MaxConcurrency, a request holds its slot until
	// that thread has processed its last chunk, behind every send and
	// chunk that reached it first, as vLLM's benchmark client leaves its
	// semaphore only after it has timed the reply. Records keep the
	// server's timeline: ClientStage rewrites them as the client observes
	// them, from the same costs.
	Client ClientCost
	// SchedulerSteps is V0's --num-scheduler-steps (multi-step scheduling,
	// vLLM 0.5.5+; 0 or 1: off). Above 1, a step that schedules no
	// prefill opens a group of that many steps run on its schedule: no
	// request joins the batch until the group ends (vLLM 0.6's
	// LLMEngine.step skips the scheduler while _has_remaining_steps), and
	// the group's tokens reach the client together at its end, one chunk
	// per request (its outputs are processed at the last step; with
	// AsyncOutputLag when the step after it returns, which see). A step
	// with prefills runs alone, as vLLM runs prefills single-step. Not
	// with pipeline parallelism.
	SchedulerSteps int
	// Ingest and Delivery are the server's per-request latencies outside
	// the engine (vllm.Resolved.Ingest, Delivery): a request reaches the
	// engine's queue Ingest after the client sends it (HTTP, parsing,
	// tokenization, the hand-off to the engine), and each token reaches
	// the client Delivery after its step ends (detokenization, the
	// response chunk). The engine is not delayed by them, but TTFT and
	// latency count them, a request holds its MaxConcurrency slot until
	// its last token is received, and the run ends when the last one is.
	Ingest, Delivery time.Duration
	// IngestSpacing is the server's event-loop work per completions
	// request (vllm.Resolved.IngestSpacing): the loop handles the requests
	// it receives in turn and hands each on when done with it, so requests
	// reach the engine at least this far apart, in the order sent, and the
	// first of a burst reaches an idle engine alone. A request sent alone
	// is not delayed (Ingest covers its own handling). Not with
	// ChatPrepare, whose hand-offs queue behind the preparations instead.
	IngestSpacing time.Duration
	// ChatPrepare is the CPU time the OpenAI server's event loop spends on
	// each chat request before it first hands the request on (vLLM's chat
	// template resolution and rendering; vllm.Resolved.ChatPrepare; 0 for
	// the completions API). The loop is one thread that runs what is ready
	// in the order it became ready, so a request's hand-off waits behind
	// every preparation queued before its own finished: a request sent
	// alone waits ChatPrepare, and of n sent at once none reaches the
	// engine before n·ChatPrepare. Ingest follows the hand-off.
	ChatPrepare time.Duration
	// ChatIngest is a chat request's latency beyond Ingest that holds no
	// other request back (vllm.Resolved.ChatIngest; 0 for the completions
	// API): set it with ChatPrepare, as a run's client sends one kind.
	ChatIngest time.Duration
	// ChatStream: the requests stream chat completions, which vLLM opens
	// with a chunk that carries the assistant's role and no text, sent with
	// the first token's own chunk. A client times the first token at the
	// first chunk with choices, the role chunk, so the first token's chunk
	// adds an ITL gap of zero: a record has one gap per output token.
	ChatStream bool
	// AsyncOutputLag is V0's async output processing (vLLM 0.6–0.10 by
	// default, PR #7049): the engine processes step i's outputs inside
	// step i+1 (the model runner's async callback) and LLMEngine.step
	// returns them when step i+1 ends, so each step's tokens, the first
	// included, reach the client when the next step ends, or at once when
	// no step follows. The engine's own state is not delayed. Single-batch
	// runs only (no pipeline parallelism).
	//
	// With multi-step groups (SchedulerSteps > 1) every step of a group
	// and every prefill step is processed inside the next step too (PR
	// #8050, vLLM 0.6.0), and its outputs go out when that step returns to
	// the engine loop: a group's intermediate step does not wait for the
	// GPU, so it returns once the host has launched it (perf.LaunchTimer); a
	// prefill step or a group's last step blocks until the GPU finishes
	// it. So a prefill's first token goes out as the next group starts,
	// and a group's chunk at once, or after the prefill that follows it.
	// Processing an intermediate step hands on only the requests it
	// finished, with every token the group held for them
	// (LLMEngine._process_model_outputs creates outputs for finished
	// requests at every step and for the others at the group's last), and
	// only if the model runner could pythonise that step early, which it
	// does when the GPU had finished it by the time the next step's
	// callback looked: when the next step is host-bound. The group's last
	// step pythonises the whole group, blocking, and hands on every
	// request the group finished. MultiStepStream hands on every
	// processed step.
	AsyncOutputLag bool
	// MultiStepStream is --multi-step-stream-outputs (vLLM 0.6.2, PR #8335;
	// on by default from 0.6.3, PR #9047): with AsyncOutputLag, every step
	// of a multi-step group hands its tokens on when it is processed,
	// rather than at the group's last step.
	MultiStepStream bool
	// ColdStart: the server's Triton cache starts empty (vllm.ColdStart):
	// a step that first needs a kernel variant waits for its compile,
	// host-bound. Each run starts its own cache.
	ColdStart *vllm.ColdStart
}

// ConfigFor is the Config that times a resolved vLLM deployment: its
// engine, step model, multi-step groups, the OpenAI server's request
// latencies and V0's async output processing. Callers add their run's own
// settings (statistics, concurrency, record reuse).
func ConfigFor(r *vllm.Resolved) Config {
	return Config{Engine: r.Engine, Model: r.StepModel, SchedulerSteps: r.SchedulerSteps,
		Ingest: r.Ingest, Delivery: r.Delivery, IngestSpacing: r.IngestSpacing,
		AsyncOutputLag: r.AsyncOutputLag, MultiStepStream: r.MultiStepStream, ColdStart: r.ColdStart}
}

// ChatClient sets what vLLM's chat API does to a request (r's
// ChatPrepare and ChatIngest, and its stream's role chunk: ChatStream) on
// a Config whose client sends chat requests.
func (c *Config) ChatClient(r *vllm.Resolved) {
	c.ChatPrepare, c.ChatIngest, c.ChatStream = r.ChatPrepare, r.ChatIngest, true
}

// StatsSample is the engine's state at one instant of virtual time, with
// throughputs over the interval that ended there (vLLM's stats log line).
type StatsSample struct {
	// At is on the records' clock (the workload's arrival offsets), at the
	// multiples of StatsInterval from the first arrival to the last
	// completion; the first interval starts at the first arrival.
	At time.Duration
	engine.Stats
	KVUsage              float64 // 0..1
	PromptThroughput     float64 // tokens/s over the interval
	GenerationThroughput float64 // tokens/s over the interval
	// PrefixHitRate is 0..1: over the last 1000 requests' first admissions
	// in V1 (vLLM's PrefixCachingMetrics), cumulative in V0.
	PrefixHitRate float64
	// HostBoundSteps and HostBoundTime are the interval's steps whose
	// duration host (CPU) work decided and their time; Steps and StepTime
	// all of its steps (only a perf.HostAwareModel reports host-bound steps).
	HostBoundSteps, Steps   int64
	HostBoundTime, StepTime time.Duration
}

// Result summarises a simulation; per-request records go to Run's emit.
type Result struct {
	Duration    time.Duration // first arrival to last completion
	Steps       int64
	Preemptions int64
	// Samples holds the periodic samples, at most maxSamples: when more are
	// taken, every other one is dropped and the spacing doubles.
	Samples []StatsSample
	// MeanStepGap is the mean gap between consecutive steps that produce a
	// token for the same request (the mean inter-token latency).
	MeanStepGap time.Duration
	Engine      engine.Stats // final
	// Max holds the exact maxima over every scheduling step, which the
	// periodic samples would miss on a run shorter than StatsInterval.
	Max Maxima
	// Err is the engine's terminal failure (engine.ErrNoSwapSpace), if any;
	// every request still in the engine then failed with it.
	Err error
	// HostBoundSteps counts the steps whose duration host (CPU) work
	// decided rather than the GPU; only a perf.HostAwareModel reports them.
	// HostBoundTime is their summed duration, StepTime every step's.
	HostBoundSteps          int64
	HostBoundTime, StepTime time.Duration
	// KernelTables says where the step model's kernel times come from
	// (perf.KernelSource: "measured: H100-SXM", "derived from A40",
	// "roofline: no table"), "-" when the model does not say.
	KernelTables string
}

// Maxima are the largest engine gauges seen after any scheduling step (the
// state a stats sample at that instant would report).
type Maxima struct {
	Running, Waiting, Swapped int
	KVUsage                   float64 // 0..1
}

const (
	maxSamples      = 10000
	ctxCheckEvery   = 256
	hitRateRequests = 1000
)

// Run simulates reqs and calls emit with each request's record as soon as
// it finishes or is rejected (the record is emit's to keep). emit has the
// shape of metrics.Sink's Add, so a sink's Add (a metrics.Recorder's, as
// the CLI passes) plugs in directly; an error from it stops the run. Memory grows
// with the requests in flight, not with len(reqs) (apart from one pointer
// per request). Requests are taken in Arrival order (stable). The result is
// deterministic: the same input gives the same records and samples.
//
// Prompt token IDs for prefix caching come from PromptIDs; failing that,
// with prefix caching on, from DerivePromptIDs(Prompt, PromptLen), which
// costs 8 bytes per prompt token while the request is in flight. Without
// prefix caching only the lengths matter.
//
// Records: Scheduled = Dispatched = Start = Arrival; TTFT and Latency from
// Start; ITL holds one gap per output token after the first (with
// Config.ChatStream one per output token, the first zero); OutputLen is
// the tokens generated; Success false with Error set for rejected requests.
func Run(ctx context.Context, cfg Config, reqs []workload.Request, emit func(*metrics.Record) error) (*Result, error) {
	return RunStream(ctx, cfg, workload.StreamOf(reqs), emit)
}

// RunStream is Run over requests taken one at a time from a stream in
// arrival order (workload.NewStream generates each as it is taken), so
// memory follows the requests in flight, not the workload's size.
func RunStream(ctx context.Context, cfg Config, reqs *workload.Stream, emit func(*metrics.Record) error) (*Result, error) {
	if cfg.Model == nil {
		return nil, errors.New("sim: Config.Model is nil; pass a perf.StepModel such as perf.NewRoofline(deployment)")
	}
	if emit == nil {
		emit = func(*metrics.Record) error { return nil }
	}
	r := &runner{
		reqs:    reqs,
		emit:    emit,
		caching: cfg.Engine.EnablePrefixCaching,
		v1:      cfg.Engine.Version == engine.V1,
		stride:  1,
		outBase: 1,
	}
	if r.caching && reqs.DeferPrompts() {
		// Build each prompt at its first admission, in a recycled buffer:
		// a burst's waiting queue then holds no IDs.
		r.deferred = true
		cfg.Engine.PromptIDs = r.buildPrompt
	}
	// The engine leaves out the outputs of tokens that only extend a run
	// (flights.lasts catches up from the next output's TokenGap), except
	// with V0's virtual engines, which number their steps apart.
	cfg.Engine.OmitRunTokens = cfg.Engine.Version != engine.V0 || cfg.Engine.PipelineParallel <= 1
	if cfg.SchedulerSteps > 1 && cfg.Engine.Version == engine.V0 && cfg.Engine.PipelineParallel <= 1 {
		// A group's steps share one completion (its chunk), which the
		// engine's TokenGap, counted in Completes, cannot express.
		r.group.Steps = cfg.SchedulerSteps
		cfg.Engine.OmitRunTokens = false
	}
	eng, err := engine.New(cfg.Engine)
	if err != nil {
		return nil, fmt.Errorf("sim: engine config: %w", err)
	}
	r.cfg, r.eng = cfg, eng
	r.ingest = cfg.Ingest + cfg.ChatIngest
	r.lastHandoff = math.MinInt64 / 2 // no request handed on yet
	r.client = newClientThread(cfg.Client, cfg.MaxConcurrency)
	r.lat = r.ingest > 0 || cfg.Delivery > 0 || cfg.ChatPrepare > 0 || cfg.IngestSpacing > 0 || r.client.on
	r.host, _ = cfg.Model.(perf.HostAwareModel)
	if cfg.Delivery > 0 {
		r.outLoop = perf.NewOutputLoop(cfg.Model)
	}
	r.jit = cfg.ColdStart.NewCache()
	r.depth = eng.MaxBatches()
	r.virtualEngines = r.depth > 1 && cfg.Engine.Version == engine.V0
	r.lag = cfg.AsyncOutputLag && r.depth == 1
	if err := r.run(ctx); err != nil {
		return nil, err
	}
	return r.result(), nil
}

type runner struct {
	cfg     Config
	eng     *engine.Engine
	reqs    *workload.Stream
	flights flights
	emit    func(*metrics.Record) error
	maxima  Maxima
	caching bool
	v1      bool
	// deferred: the stream names prompts and the engine has them built
	// when it first needs them (buildPrompt).
	deferred bool

	now        time.Duration
	start, end time.Duration
	inFlight   int
	// slotFreedAt is when the in-flight count last dropped below
	// MaxConcurrency: a queued request starts then, or at its arrival.
	slotFreedAt time.Duration

	gapSum   time.Duration
	gapCount int64

	samples      []StatsSample
	stride       int // keep every stride-th sample
	sampleN      int
	nextSample   time.Duration
	lastSample   engine.Stats
	lastSampleAt time.Duration

	// V1 prefix hit rate over the last hitRateRequests requests.
	hitRing          [hitRateRequests][2]int64
	hitPos, hitCount int
	hitQ, hitH       int64

	runErr error

	host perf.HostAwareModel // cfg.Model when it is one
	// outLoop is the API server's event loop, which chunks pass on their
	// way to the client (with Delivery only: offline runs have neither);
	// laggedLoop is its work on the lagged step's outputs
	// (Config.AsyncOutputLag).
	outLoop    perf.OutputLoop
	laggedLoop perf.OutputWork
	// firstOut is when the completion being applied's first tokens go
	// out; the clock (now) is then when its other chunks do.
	firstOut  time.Duration
	jit       *vllm.JITCache // cfg.ColdStart's compiled kernels
	hostBound int64
	// hostBoundTime and stepTime sum the host-bound and all steps'
	// durations; stepsTimed counts the steps stepTime saw. last* hold
	// their values at the last stats sample.
	hostBoundTime, stepTimeSum         time.Duration
	stepsTimed                         int64
	lastHostBound, lastStepsTimed      int64
	lastHostBoundTime, lastStepTimeSum time.Duration

	// Pipeline parallelism: up to depth batches in flight, oldest first.
	depth          int
	inPipe         []batch
	pipe           perf.Pipeline
	virtualEngines bool // V0: a free virtual engine takes arrivals at once

	// Multi-step scheduling (Config.SchedulerSteps > 1): group places
	// steps in their group and holds the outputs of its steps so far
	// until they go out.
	group engine.MultiStepGroup

	// Async output processing (Config.AsyncOutputLag): lagged holds the
	// last step's outputs until the next step ends (or no step follows);
	// lagging says they are pending, laggedGroupEnd that their step ended
	// its multi-step group (or ran alone).
	lag            bool
	lagged         []engine.Output
	lagging        bool
	laggedGroupEnd bool
	// laggedOmitted is the tokens of the lagged step the engine gave no
	// output (engine.OmittedTokens).
	laggedOmitted int

	// Request latencies (Config.Ingest, Delivery; lat says either is
	// set; ingest is a request's from hand-off to the engine's queue,
	// ChatIngest included). sent holds the requests the client has sent
	// that have not reached the engine, oldest first (from sentHead); clientInFlight
	// counts requests the client has sent and not received in full;
	// releases holds the instants the client receives the last token of
	// finished requests, oldest first (from relHead).
	lat      bool
	ingest   time.Duration
	sent     []sentRequest
	sentHead int
	// loopFree is when the server's event loop finishes the chat
	// preparations queued so far (Config.ChatPrepare); handoffScan is the
	// last sent request known to have been queued before the head's
	// preparation finished.
	loopFree    time.Duration
	handoffScan int
	// lastHandoff is the last completions request's hand-off
	// (Config.IngestSpacing).
	lastHandoff    time.Duration
	clientInFlight int
	releases       []time.Duration
	relHead        int

	// client is the benchmark client's thread (Config.Client, with a
	// cap); its chunks count the outputs' tokens and those the engine
	// gave no output (engine.OmittedTokens).
	client clientThread

	// Recycled records and ITL slices (Config.ReuseRecords).
	freeRecs []*metrics.Record
	freeITL  [][]time.Duration

	// outTimes[i] is the instant of completion outBase+i; outN numbers the
	// completion being applied (from 1). A request that gets a token at
	// every completion only extends its run (flightEntry.first to its entry
	// in flights.lasts), and
	// its gaps are read back from here into its ITL when the run breaks or
	// it finishes: the per-token path then touches neither the record nor
	// its ITL slice, which cost a cache miss per token.
	outTimes  []time.Duration
	outBase   int64
	outN      int64
	outTrimAt int // log length that triggers the next trim
}

func (r *runner) run(ctx context.Context) error {
	next := r.reqs.Peek()
	if next == nil {
		return nil
	}
	r.startClock(next.Arrival)
	// The client's initial test prompt ran the first request's prefill
	// before the timed run (bench.InitialTest, vLLM's benchmark alike).
	r.jit.Warm(enginePromptLen(next))
	id := 0
	for iter := 0; ; iter++ {
		if iter%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("sim: stopped at virtual time %v with %d requests in flight: %w", r.now-r.start, r.inFlight, err)
			}
		}
		if err := r.admitArrivals(&next, &id); err != nil {
			return err
		}
		if err := r.fillPipeline(); err != nil {
			return err
		}
		if len(r.inPipe) == 0 {
			if r.lagging {
				// No step follows: vLLM runs the sequences that just
				// finished once more while it processes their outputs,
				// then returns them. A multi-step group's last outputs go
				// out at once (its steps do not wait for their outputs).
				r.advance(r.now + r.drainStep())
				if err := r.deliverLagged(false); err != nil {
					return err
				}
				continue
			}
			if t, ok := r.nextArrival(next); ok {
				r.advance(max(r.now, t))
				continue
			}
			if r.eng.Idle() {
				break
			}
			s := r.eng.Stats()
			return fmt.Errorf("sim: engine stalled at virtual time %v with %d running, %d waiting, %d swapped and no step to run (an engine bug)",
				r.now-r.start, s.Running, s.Waiting, s.Swapped)
		}
		if t, ok := r.arrivalForIdleVirtualEngine(next); ok {
			r.advance(t)
			continue
		}
		if err := r.completeOldestBatch(); err != nil {
			return err
		}
	}
	r.runErr = r.eng.Err()
	return nil
}

// startClock sets the virtual clock to the first arrival and aligns the
// first stats sample to a multiple of StatsInterval.
func (r *runner) startClock(first time.Duration) {
	r.now = first
	r.start = r.now
	r.end = r.now
	if iv := r.cfg.StatsInterval; iv > 0 {
		r.nextSample = (r.start/iv + 1) * iv
		r.lastSampleAt = r.start
	}
}

// admitArrivals hands the engine the requests that have reached it by
// now; next is the stream's next request and id the next request's ID.
func (r *runner) admitArrivals(next **workload.Request, id *int) error {
	if r.lat {
		return r.clientEvents(next, id)
	}
	for *next != nil && (*next).Arrival <= r.now && !r.full() && !r.group.Open() {
		w := r.reqs.Next()
		start := max(w.Arrival, r.slotFreedAt)
		if err := r.add(*id, w, start, start, r.reqs.PromptRef()); err != nil {
			return err
		}
		*id++
		*next = r.reqs.Peek()
	}
	return nil
}

// fillPipeline schedules steps until the pipeline is full or the engine
// has nothing to schedule: one step without PP; with PP up to one batch
// per stage, each scheduled while the others are in flight.
func (r *runner) fillPipeline() error {
	for len(r.inPipe) < r.depth {
		if r.group.Grouping() {
			r.eng.HoldAdmissions(r.group.Open())
		}
		st := r.eng.Schedule(r.now)
		r.noteMaxima()
		for i := range st.Rejected {
			r.catchUp(&st.Rejected[i])
			if err := r.finish(&st.Rejected[i], r.now); err != nil {
				return err
			}
		}
		if r.client.on {
			r.toClientThread()
		}
		if st.Empty() {
			if r.group.Open() {
				// Every request of the group finished before its end.
				r.group.End()
				if r.lagging {
					// The pending step's processing hands on the rest.
					r.laggedGroupEnd = true
					continue
				}
				if err := r.deliverHeld(); err != nil {
					return err
				}
				continue
			}
			return nil
		}
		b := batch{st: st}
		b.out, b.hostBound = r.batchOut(st.Shape)
		b.loop = r.outLoop.Work(st.Shape)
		if r.group.Grouping() {
			b.cont, b.open = r.group.Place(st.Shape)
			if r.lagging && b.open {
				// An intermediate step returns to the engine loop once
				// launched, without waiting for the GPU: the previous
				// step's outputs, processed in its callback, go out then.
				if err := r.deliverLaggedAt(r.now+perf.LaunchTime(r.cfg.Model, st.Shape), b.hostBound); err != nil {
					return err
				}
			}
		}
		r.inPipe = append(r.inPipe, b)
	}
	return nil
}

// nextArrival is the instant of the next event that can bring a request
// to the engine: the client's next event with request latencies, else the
// stream's next arrival while a concurrency slot is free.
func (r *runner) nextArrival(next *workload.Request) (time.Duration, bool) {
	if r.lat {
		return r.nextClientEvent(next)
	}
	if next != nil && !r.full() {
		return next.Arrival, true
	}
	return 0, false
}

// arrivalForIdleVirtualEngine is the instant to advance to when a request
// arrives before the oldest batch is out and a V0 virtual engine has no
// batch in flight: that engine takes it at once, while V1's engine core
// waits for its oldest batch.
func (r *runner) arrivalForIdleVirtualEngine(next *workload.Request) (time.Duration, bool) {
	if !r.virtualEngines || len(r.inPipe) >= r.depth {
		return 0, false
	}
	out := r.inPipe[0].out
	if r.lat {
		if t, ok := r.nextClientEvent(next); ok && t < out {
			return max(r.now, t), true
		}
	} else if next != nil && !r.full() && next.Arrival < out {
		return next.Arrival, true
	}
	return 0, false
}

// completeOldestBatch advances the clock to the oldest batch's output and
// applies it; a multi-step group's outputs are held until its last step.
func (r *runner) completeOldestBatch() error {
	head := r.inPipe[0]
	r.inPipe = append(r.inPipe[:0], r.inPipe[1:]...)
	r.advance(head.out)
	if r.lag {
		// The previous step's outputs go out as this one ends; this
		// step's wait for the next. A group's last step pythonises every
		// step of the group, blocking, and processes the ones before it
		// (MultiStepModelRunner._final_process_outputs).
		if err := r.deliverLagged(head.hostBound || (head.cont && !head.open)); err != nil {
			return err
		}
		r.lagged = append(r.lagged[:0], r.eng.Complete(head.st)...)
		r.laggedLoop = head.loop
		r.laggedOmitted = r.eng.OmittedTokens()
		r.lagging = true
		r.laggedGroupEnd = !head.open
		return nil
	}
	outs := r.eng.Complete(head.st)
	if r.client.on {
		r.client.chunks += r.eng.OmittedTokens()
	}
	if r.group.Grouping() {
		r.group.Hold(outs)
		if head.open {
			r.noteCompletion(head.cont)
			return nil
		}
		outs = r.group.Release()
	}
	return r.applyThroughLoop(head.loop, outs, func() { r.noteCompletion(head.cont) })
}

// noteCompletion logs the completion of the step that just ended; a step
// that continues a multi-step group moves the group's entry instead, as
// the group's chunk goes out when its last step ends.
func (r *runner) noteCompletion(cont bool) {
	if cont {
		r.outTimes[len(r.outTimes)-1] = r.now
	} else {
		r.logCompletion()
	}
}

// applyThroughLoop applies a completion's outputs when the API server's
// loop sends their chunks (perf.OutputLoop): the clock moves to that
// instant, the first tokens' to firstOut, note (if any) logs the
// completion then, and the engine's instant comes back afterwards.
func (r *runner) applyThroughLoop(w perf.OutputWork, outs []engine.Output, note func()) error {
	engineNow := r.now
	r.now, r.firstOut = r.outLoop.Through(r.now, w)
	if note != nil {
		note()
	}
	err := r.apply(outs)
	r.now = engineNow
	return err
}

// apply hands the outputs of a completion to the requests' records.
func (r *runner) apply(outs []engine.Output) error {
	for i := range outs {
		o := &outs[i]
		if last := r.flights.lastAt(o.ID); last != nil && r.extendsRun(o, *last) {
			*last = r.outN
			r.client.chunks++
			continue
		}
		if err := r.output(o); err != nil {
			return err
		}
	}
	if r.client.on {
		r.toClientThread()
		r.client.handFirst(r.firstOut + r.cfg.Delivery)
	}
	return nil
}

// drainStep is the extra decode step vLLM runs with async output
// processing when the lagged step finished sequences and nothing else is
// scheduled (engine.FinishedDecodes). When other steps follow, the
// finished sequences ride in the next one and its time is not changed
// [approximation]. It is not counted in the step statistics. A
// multi-step group runs none: its steps do not wait for their outputs.
func (r *runner) drainStep() time.Duration {
	if r.group.Grouping() {
		return 0
	}
	s := engine.FinishedDecodes(r.lagged, func(id uint64) (int, bool) {
		if fl := r.flights.at(id); fl != nil {
			return fl.promptLen, true
		}
		return 0, false
	})
	if s.Decodes == 0 {
		return 0
	}
	d, _ := r.modelTime(s)
	return d
}

// deliverLagged hands the client the lagged step's outputs at the current
// instant, as one completion. In a multi-step group they join the
// group's held outputs, which go out when the lagged step ended the group
// (or streaming). Processing an intermediate step hands on the requests
// the group finished so far only when the steps were pythonised
// (pythonised): the step processing it was host-bound, so the GPU had
// finished the lagged step when the model runner's callback looked
// (maybe_pythonize polls the step's event and leaves it for later when
// the GPU is behind), or it is the group's last step, which pythonises
// them all.
func (r *runner) deliverLagged(pythonised bool) error {
	if !r.lagging {
		return nil
	}
	r.lagging = false
	if !r.group.Grouping() {
		if r.client.on {
			r.client.chunks += r.laggedOmitted
		}
		return r.applyThroughLoop(r.laggedLoop, r.lagged, r.logCompletion)
	}
	out, handOn := r.group.HandOnLagged(r.lagged, r.laggedGroupEnd, r.cfg.MultiStepStream, pythonised)
	if !handOn {
		return nil
	}
	return r.applyThroughLoop(r.laggedLoop.Finished(len(out), len(r.lagged)), out, r.logCompletion)
}

// deliverLaggedAt is deliverLagged at instant t, from now up to the end
// of the step being launched, before any other event.
func (r *runner) deliverLaggedAt(t time.Duration, pythonised bool) error {
	now := r.now
	r.now = t
	err := r.deliverLagged(pythonised)
	r.now = now
	return err
}

// deliverHeld applies a multi-step group's held outputs: at its end, or
// when it ends early.
func (r *runner) deliverHeld() error {
	return r.applyThroughLoop(perf.OutputWork{}, r.group.Release(), nil)
}

// advance moves the clock to t, taking the samples due strictly before t
// (a sample at instant b sees every step that ended at or before b).
func (r *runner) advance(t time.Duration) {
	if r.cfg.StatsInterval > 0 {
		for r.nextSample < t {
			r.takeSample(r.nextSample)
			r.nextSample += r.cfg.StatsInterval
		}
	}
	r.now = t
}

// batch is a step in flight and the instant its output is out. With
// multi-step scheduling, cont says the step continues an open group and
// open that the group goes on after it (engine.MultiStepGroup.Place).
type batch struct {
	st         *engine.Step
	out        time.Duration
	cont, open bool
	hostBound  bool
	// loop is the API server's work on the step's outputs
	// (perf.OutputLoopModel).
	loop perf.OutputWork
}

// batchOut is when a step scheduled now comes out: after its step time,
// and with PP after the pipeline can take it; hostBound says host work
// set its time.
func (r *runner) batchOut(s perf.StepShape) (out time.Duration, hostBound bool) {
	d, hostBound := r.stepTime(s)
	d = max(d, 0)
	if r.depth == 1 {
		return r.now + d, hostBound
	}
	return r.pipe.Enter(r.now, d, perf.StageTime(r.cfg.Model, s, r.depth)), hostBound
}

// stepTime is modelTime, counted in the run's step statistics.
func (r *runner) stepTime(s perf.StepShape) (time.Duration, bool) {
	d, hostBound := r.modelTime(s)
	if c := r.jit.Compile(s); c > 0 {
		d, hostBound = d+c, true
	}
	if hostBound {
		r.hostBound++
		r.hostBoundTime += d
	}
	r.stepTimeSum += d
	r.stepsTimed++
	return d, hostBound
}

// modelTime is the step model's time for s, and whether the host set it.
func (r *runner) modelTime(s perf.StepShape) (time.Duration, bool) {
	if r.host == nil {
		return r.cfg.Model.StepTime(s), false
	}
	return r.host.StepTimeHost(s)
}

func (r *runner) full() bool {
	return r.cfg.MaxConcurrency > 0 && r.inFlight >= r.cfg.MaxConcurrency
}

// sentRequest is a request the client has sent (at start) that has not
// reached the engine yet (Config.Ingest, ChatPrepare).
type sentRequest struct {
	w     workload.Request
	ref   workload.PromptRef
	id    int
	start time.Duration
	// prepared is when the server's event loop finished preparing the
	// request (Config.ChatPrepare; start without it); handoff when the
	// loop passed it on, or unknown (-1) until prepared has passed.
	prepared, handoff time.Duration
}

// clientEvents applies, in time order, what the client did up to now
// with request latencies: releases (the last token of a request
// received, freeing its concurrency slot) and sends (a request whose
// arrival is due and that has a slot); then it hands the engine the sent
// requests whose Ingest has passed (at a multi-step group's end only).
func (r *runner) clientEvents(next **workload.Request, id *int) error {
	for {
		n := *next
		relDue := r.relHead < len(r.releases) && r.releases[r.relHead] <= r.now
		arrDue := n != nil && n.Arrival <= r.now
		switch {
		case r.clientBatchFirst(relDue, arrDue, n):
			r.processClientBatch()
			continue
		case relDue && (!arrDue || r.clientFull() || r.releases[r.relHead] <= n.Arrival):
			if r.clientFull() {
				r.slotFreedAt = r.releases[r.relHead]
			}
			r.relHead++
			r.clientInFlight--
			continue
		case arrDue && !r.clientFull():
			w := r.reqs.Next()
			start := max(w.Arrival, r.slotFreedAt)
			sr := sentRequest{w: *w, ref: r.reqs.PromptRef(), id: *id, start: start, prepared: start, handoff: start}
			if r.client.on {
				r.client.send(start)
			}
			switch {
			case r.cfg.ChatPrepare > 0:
				r.loopFree = max(start, r.loopFree) + r.cfg.ChatPrepare
				sr.prepared, sr.handoff = r.loopFree, -1
			case r.cfg.IngestSpacing > 0:
				// In the engine Ingest after it is sent, and no sooner
				// than IngestSpacing after the request sent before it.
				sr.handoff = max(start, r.lastHandoff+r.cfg.IngestSpacing)
				r.lastHandoff = sr.handoff
			}
			r.sent = append(r.sent, sr)
			*id++
			r.clientInFlight++
			*next = r.reqs.Peek()
			continue
		}
		break
	}
	if r.relHead > 1024 && r.relHead*2 > len(r.releases) {
		r.releases = r.releases[:copy(r.releases, r.releases[r.relHead:])]
		r.relHead = 0
	}
	for r.sentHead < len(r.sent) && !r.group.Open() {
		s := &r.sent[r.sentHead]
		if s.handoff < 0 && !r.resolveHandoff() {
			break
		}
		if s.handoff+r.ingest > r.now {
			break
		}
		r.sentHead++
		if err := r.add(s.id, &s.w, s.start, s.handoff+r.ingest, s.ref); err != nil {
			return err
		}
		*s = sentRequest{}
	}
	if r.sentHead == len(r.sent) {
		r.sent, r.sentHead, r.handoffScan = r.sent[:0], 0, 0
	}
	return nil
}

// clientBatchFirst reports whether the client thread's next batch is
// the first of the client's events due now. At one instant a release
// comes first (it may let a send go), then a send, then the chunks, in
// the order ApplyClient processes sends and chunks; a batch is due once
// the clock has passed its instant, when no more can join it.
func (r *runner) clientBatchFirst(relDue, arrDue bool, next *workload.Request) bool {
	at, ok := r.client.next()
	if !ok || at >= r.now || relDue && r.releases[r.relHead] <= at {
		return false
	}
	return !arrDue || r.clientFull() || at < max(next.Arrival, r.slotFreedAt)
}

// processClientBatch runs the client thread through its next batch; the
// requests it finished free their slots then.
func (r *runner) processClientBatch() {
	done, finished := r.client.process()
	for range finished {
		r.releases = append(r.releases, done)
	}
}

// toClientThread hands the client thread what was counted since the last
// call, delivered Delivery after now.
func (r *runner) toClientThread() { r.client.hand(r.now + r.cfg.Delivery) }

// released notes that the client receives a request's last chunk (or its
// error) Delivery after now, late more when that chunk is a first token
// (firstOut), which frees its slot then or, with a timed client thread,
// once the thread is through it (toClientThread).
func (r *runner) released(late time.Duration) {
	if r.client.on {
		if late > 0 {
			r.client.firstFinished++
		} else {
			r.client.finished++
		}
		return
	}
	r.releases = append(r.releases, r.now+late+r.cfg.Delivery)
}

// resolveHandoff sets the head sent request's hand-off once its
// preparation has finished (so every request sent before then is known):
// the event loop runs the hand-off after the preparations of all requests
// that reached it first, the last of which ends at its own prepared.
func (r *runner) resolveHandoff() bool {
	head := &r.sent[r.sentHead]
	if head.prepared > r.now {
		return false
	}
	j := max(r.handoffScan, r.sentHead)
	for j+1 < len(r.sent) && r.sent[j+1].start <= head.prepared {
		j++
	}
	r.handoffScan = j
	head.handoff = r.sent[j].prepared
	return true
}

// nextClientEvent is the instant of the client's next event with request
// latencies: a release, a send, or a sent request reaching the engine.
func (r *runner) nextClientEvent(next *workload.Request) (time.Duration, bool) {
	t, ok := time.Duration(math.MaxInt64), false
	if r.relHead < len(r.releases) {
		t, ok = r.releases[r.relHead], true
	}
	if at, due := r.client.next(); due {
		t, ok = min(t, at+1), true
	}
	if next != nil && !r.clientFull() {
		t, ok = min(t, next.Arrival), true
	}
	if r.sentHead < len(r.sent) && !r.group.Open() {
		s := &r.sent[r.sentHead]
		at := s.handoff + r.ingest
		if s.handoff < 0 {
			at = s.prepared // the hand-off is known then
		}
		t, ok = min(t, at), true
	}
	return t, ok
}

func (r *runner) clientFull() bool {
	return r.cfg.MaxConcurrency > 0 && r.clientInFlight >= r.cfg.MaxConcurrency
}

// enginePromptLen is the prompt length of request w as the engine sees it
// when it takes no token IDs derived from the text.
func enginePromptLen(w *workload.Request) int {
	switch {
	case w.PromptIDs != nil:
		return len(w.PromptIDs)
	case w.PromptLen <= 0 && w.Prompt != "":
		return len(DerivePromptIDs(w.Prompt, 0))
	}
	return w.PromptLen
}

// add hands the engine request w, sent by the client at start and in the
// engine's queue from arrival; ref names its prompt when prompts are
// deferred.
func (r *runner) add(id int, w *workload.Request, start, arrival time.Duration, ref workload.PromptRef) error {
	er := engine.Request{ID: uint64(id), MaxTokens: w.MaxTokens, Arrival: arrival, DeferredPrompt: r.deferred}
	ids := w.PromptIDs
	switch {
	case ids != nil:
		er.Prompt = ids
	case r.caching && w.Prompt != "":
		er.Prompt = DerivePromptIDs(w.Prompt, w.PromptLen)
	default:
		er.PromptLen = enginePromptLen(w)
	}
	promptLen := er.PromptLen
	if er.Prompt != nil {
		promptLen = len(er.Prompt)
	}
	fl := flightEntry{
		live: true, index: w.Index, arrival: w.Arrival, start: start,
		promptLen: promptLen, maxTokens: w.MaxTokens, prompt: w.PromptIDs,
	}
	if err := r.eng.Add(er); err != nil {
		r.reqs.Recycle(w.PromptIDs) // the engine refused it before keeping it
		rec := r.record(&fl)
		rec.Error = err.Error()
		r.end = max(r.end, r.now+r.cfg.Delivery)
		if r.lat {
			r.released(0)
			r.toClientThread()
		}
		return r.emitRecord(rec)
	}
	if r.deferred {
		fl.ref = ref
	}
	r.flights.put(uint64(id), fl)
	r.inFlight++
	return nil
}

func (r *runner) output(o *engine.Output) error {
	fl := r.flights.at(o.ID)
	if fl == nil || !fl.live {
		return nil
	}
	r.record(fl)
	last := r.catchUp(o)
	if o.NewTokens > 0 {
		k := r.outN
		switch {
		case *last == k:
			// Another token of a multi-step group's chunk.
		case *last == k-1 && *last != 0:
			*last = k
			r.client.chunks++
		case *last == 0:
			r.client.firstChunks++
			rec := fl.rec
			rec.TTFT = r.firstOut + r.cfg.Delivery - rec.Start
			fl.firstLate = r.firstOut - r.now
			rec.CachedTokens = o.CachedTokens
			if r.cfg.ChatStream {
				// The role chunk came first (Config.ChatStream).
				rec.ITL = append(r.newITL(rec.MaxTokens), 0)
				r.client.firstChunks++
			} else if rec.MaxTokens > 1 {
				rec.ITL = r.newITL(rec.MaxTokens - 1)
			}
			fl.first, *last = k, k
		default:
			r.client.chunks++
			r.flushRun(fl, *last)
			gap := r.now - r.outTime(*last) - fl.firstLate
			fl.firstLate = 0
			fl.rec.ITL = append(fl.rec.ITL, gap)
			r.gapSum += gap
			r.gapCount++
			fl.first, *last = k, k
		}
	}
	if o.CachedTokens > 0 {
		fl.rec.CachedTokens = o.CachedTokens
	}
	if o.Finished {
		return r.finish(o, r.now)
	}
	return nil
}

// catchUp sets the end of o's request's run from o.TokenGap: the engine
// left out the outputs of the tokens that extended it. It returns the
// request's entry in flights.lasts.
func (r *runner) catchUp(o *engine.Output) *int64 {
	last := r.flights.lastAt(o.ID)
	if last != nil && o.TokenGap > 0 {
		*last = r.outN - int64(o.TokenGap)
	}
	return last
}

// extendsRun reports that o is a token that only extends the run of a
// request whose last token came from completion last: the common case,
// handled in the completion loop without a call.
func (r *runner) extendsRun(o *engine.Output, last int64) bool {
	return o.NewTokens > 0 && !o.Finished && o.CachedTokens == 0 && last != 0 && last == r.outN-1
}

// logCompletion numbers the completion about to be applied and logs its
// instant, first dropping what no request in flight still needs once the
// log has grown.
func (r *runner) logCompletion() {
	if len(r.outTimes) >= max(r.outTrimAt, 1<<14) {
		r.trimOutTimes()
	}
	r.outN++
	r.outTimes = append(r.outTimes, r.now)
}

// trimOutTimes writes every pending run into its ITL and drops the log
// before the oldest last token of a request in flight.
func (r *runner) trimOutTimes() {
	keep := r.outN
	for i := r.flights.head; i < len(r.flights.entries); i++ {
		fl, last := &r.flights.entries[i], r.flights.lasts[i]
		if fl.rec == nil || last == 0 {
			continue
		}
		r.flushRun(fl, last)
		keep = min(keep, last)
	}
	n := copy(r.outTimes, r.outTimes[keep-r.outBase:])
	r.outTimes = r.outTimes[:n]
	r.outBase = keep
	r.outTrimAt = 2 * n // a request stalled in flight keeps the log long
}

func (r *runner) outTime(k int64) time.Duration { return r.outTimes[k-r.outBase] }

// flushRun appends the gaps of fl's run after its first token, up to its
// last token at completion last, to its ITL.
func (r *runner) flushRun(fl *flightEntry, last int64) {
	if last == fl.first {
		return
	}
	times := r.outTimes[fl.first-r.outBase : last-r.outBase+1]
	rec := fl.rec
	n := len(rec.ITL)
	rec.ITL = slices.Grow(rec.ITL, len(times)-1)[:n+len(times)-1]
	gaps := rec.ITL[n:]
	for i := range gaps {
		gaps[i] = times[i+1] - times[i]
	}
	// The first token went out after the completion's other chunks.
	gaps[0] -= fl.firstLate
	r.gapSum += times[len(times)-1] - times[0] - fl.firstLate
	fl.firstLate = 0
	r.gapCount += last - fl.first
	fl.first = last
}

func (r *runner) finish(o *engine.Output, now time.Duration) error {
	fl := r.flights.at(o.ID)
	if fl == nil || !fl.live {
		return nil
	}
	rec := r.record(fl)
	// late: the request's last chunk is its first token, which went out
	// firstLate after the completion's other chunks.
	var late time.Duration
	if last := *r.flights.lastAt(o.ID); last != 0 {
		r.flushRun(fl, last)
		late = fl.firstLate
		rec.Latency = r.outTime(last) + late + r.cfg.Delivery - rec.Start
		// Only the output that finishes a request successfully gets
		// here with its last token; a failure overwrites this below.
		rec.OutputLen = o.NumGenerated
	}
	// The engine has released the request, and with it the prompt.
	r.reqs.Recycle(r.flights.drop(o.ID))
	if !r.lat && r.full() {
		r.slotFreedAt = now
	}
	r.inFlight--
	r.end = max(r.end, now+late+r.cfg.Delivery)
	if r.lat {
		r.released(late)
	}
	if o.Err != nil {
		rec.Error = o.Err.Error()
		rec.Latency = now - rec.Start
		rec.OutputLen = o.NumGenerated
	} else {
		rec.Success = true
	}
	if r.v1 && rec.Success {
		r.noteHitRate(int64(rec.PromptLen), int64(rec.CachedTokens))
	}
	return r.emitRecord(rec)
}

func (r *runner) emitRecord(rec *metrics.Record) error {
	if err := r.emit(rec); err != nil {
		return fmt.Errorf("sim: emitting record %d: %w", rec.Index, err)
	}
	if r.cfg.ReuseRecords {
		if cap(rec.ITL) > 0 {
			r.freeITL = append(r.freeITL, rec.ITL[:0])
		}
		rec.ITL = nil
		r.freeRecs = append(r.freeRecs, rec)
	}
	return nil
}

// record is fl's record, made on first use.
func (r *runner) record(fl *flightEntry) *metrics.Record {
	if fl.rec == nil {
		fl.rec = r.newRecord()
		*fl.rec = metrics.Record{
			Index:      fl.index,
			Scheduled:  fl.arrival,
			Dispatched: fl.arrival,
			Start:      fl.start,
			PromptLen:  fl.promptLen,
			MaxTokens:  fl.maxTokens,
		}
	}
	return fl.rec
}

func (r *runner) newRecord() *metrics.Record {
	if n := len(r.freeRecs); n > 0 {
		rec := r.freeRecs[n-1]
		r.freeRecs = r.freeRecs[:n-1]
		return rec
	}
	return new(metrics.Record)
}

// newITL returns an empty slice with room for n gaps, recycled when one
// large enough is free.
func (r *runner) newITL(n int) []time.Duration {
	if k := len(r.freeITL); k > 0 {
		s := r.freeITL[k-1]
		r.freeITL = r.freeITL[:k-1]
		if cap(s) >= n {
			return s
		}
	}
	return make([]time.Duration, 0, n)
}

func (r *runner) noteHitRate(queries, hits int64) {
	slot := &r.hitRing[r.hitPos]
	if r.hitCount == hitRateRequests {
		r.hitQ -= slot[0]
		r.hitH -= slot[1]
	} else {
		r.hitCount++
	}
	slot[0], slot[1] = queries, hits
	r.hitQ += queries
	r.hitH += hits
	r.hitPos = (r.hitPos + 1) % hitRateRequests
}

func (r *runner) noteMaxima() {
	s := r.eng.Stats()
	m := &r.maxima
	m.Running, m.Waiting, m.Swapped = max(m.Running, s.Running), max(m.Waiting, s.Waiting), max(m.Swapped, s.Swapped)
	m.KVUsage = max(m.KVUsage, r.eng.KVUsage())
}

func (r *runner) takeSample(at time.Duration) {
	s := r.eng.Stats()
	secs := (at - r.lastSampleAt).Seconds()
	sample := StatsSample{
		At:                   at,
		Stats:                s,
		KVUsage:              r.eng.KVUsage(),
		PromptThroughput:     float64(s.PromptTokens-r.lastSample.PromptTokens) / secs,
		GenerationThroughput: float64(s.GenerationTokens-r.lastSample.GenerationTokens) / secs,
	}
	switch {
	case r.v1 && r.hitQ > 0:
		sample.PrefixHitRate = float64(r.hitH) / float64(r.hitQ)
	case !r.v1 && s.PrefixQueries > 0:
		sample.PrefixHitRate = float64(s.PrefixHits) / float64(s.PrefixQueries)
	}
	sample.HostBoundSteps, sample.Steps = r.hostBound-r.lastHostBound, r.stepsTimed-r.lastStepsTimed
	sample.HostBoundTime, sample.StepTime = r.hostBoundTime-r.lastHostBoundTime, r.stepTimeSum-r.lastStepTimeSum
	r.lastHostBound, r.lastStepsTimed = r.hostBound, r.stepsTimed
	r.lastHostBoundTime, r.lastStepTimeSum = r.hostBoundTime, r.stepTimeSum
	r.lastSample, r.lastSampleAt = s, at
	if r.cfg.OnStats != nil {
		r.cfg.OnStats(sample)
	}
	if r.sampleN%r.stride == 0 {
		if len(r.samples) == maxSamples {
			kept := r.samples[:0]
			for i := 0; i < len(r.samples); i += 2 {
				kept = append(kept, r.samples[i])
			}
			r.samples = kept
			r.stride *= 2
		}
		if r.sampleN%r.stride == 0 {
			r.samples = append(r.samples, sample)
		}
	}
	r.sampleN++
}

func (r *runner) result() *Result {
	s := r.eng.Stats()
	res := &Result{
		Duration:       r.end - r.start,
		Steps:          s.Steps,
		Preemptions:    s.Preemptions,
		Samples:        r.samples,
		Engine:         s,
		Max:            r.maxima,
		Err:            r.runErr,
		HostBoundSteps: r.hostBound,
		HostBoundTime:  r.hostBoundTime,
		StepTime:       r.stepTimeSum,
		KernelTables:   "-",
	}
	if k, ok := r.cfg.Model.(interface{ KernelSource() perf.KernelSource }); ok {
		res.KernelTables = k.KernelSource().String()
	}
	if r.gapCount > 0 {
		res.MeanStepGap = r.gapSum / time.Duration(r.gapCount)
	}
	return res
}

// ThroughputLine is the line of vLLM's throughput benchmark used to compare
// preemption modes: requests and tokens (prompt+output) per second of
// virtual time, the mean step gap, and the step count.
func ThroughputLine(res *Result, numRequests int, totalTokens int64) string {
	secs := res.Duration.Seconds()
	var reqRate, tokRate float64
	if secs > 0 {
		reqRate = float64(numRequests) / secs
		tokRate = float64(totalTokens) / secs
	}
	return fmt.Sprintf("Throughput: %.4f requests/s, %.4f tokens/s, Delay %.4f ms, n_step: %d",
		reqRate, tokRate, float64(res.MeanStepGap)/float64(time.Millisecond), res.Steps)
}

// flights maps engine request IDs, handed out in arrival order, to the
// records (and prompt buffers) of requests in flight: a window from the
// oldest request still in flight to the newest, so memory follows what is
// in flight.
type flights struct {
	base    uint64 // ID of entries[head]
	entries []flightEntry
	// lasts[i] numbers the completion that gave entries[i] the last token
	// of its run (0: no token yet). Every token reads and writes it, so it
	// lives apart from the rest of the entry: a step's worth of lasts takes
	// a few cache lines, a step's worth of entries one line each.
	lasts []int64
	head  int
}

type flightEntry struct {
	live bool // the request is in flight
	// rec is made at the request's first output (or its end): a burst
	// adds every request at once, and records made then were all live
	// together instead of recycled.
	rec       *metrics.Record
	index     int
	arrival   time.Duration
	start     time.Duration
	promptLen int
	maxTokens int
	// first numbers the completion that gave the request the first token
	// of its run (its last is in flights.lasts).
	first int64
	// firstLate is how long after its completion's other chunks the
	// request's first token went out (perf.OutputLoop), until the gap
	// after it is counted.
	firstLate time.Duration
	// prompt is the stream's buffer of the request's IDs, given back to
	// the stream when the request leaves the engine.
	prompt []int32
	ref    workload.PromptRef // with deferred prompts: what to build
}

// buildPrompt is the engine's Config.PromptIDs with deferred prompts.
func (r *runner) buildPrompt(id uint64) []int32 {
	fl := r.flights.at(id)
	if fl == nil {
		return nil // never happens: the engine asks only for requests it holds
	}
	if fl.prompt == nil {
		fl.prompt = r.reqs.BuildPrompt(fl.ref)
	}
	return fl.prompt
}

func (f *flights) at(id uint64) *flightEntry {
	if id < f.base || id-f.base >= uint64(len(f.entries)-f.head) {
		return nil
	}
	return &f.entries[f.head+int(id-f.base)]
}

// lastAt is the run's last completion of the request, nil when it is not
// in flight.
func (f *flights) lastAt(id uint64) *int64 {
	if id < f.base || id-f.base >= uint64(len(f.lasts)-f.head) {
		return nil
	}
	return &f.lasts[f.head+int(id-f.base)]
}

// put records the request with the next ID (IDs come in order, from 0).
func (f *flights) put(id uint64, fl flightEntry) {
	if f.head == len(f.entries) {
		f.entries, f.lasts, f.head, f.base = f.entries[:0], f.lasts[:0], 0, id
	}
	for f.base+uint64(len(f.entries)-f.head) < id {
		f.entries = append(f.entries, flightEntry{}) // an ID the engine refused
		f.lasts = append(f.lasts, 0)
	}
	if f.head > 0 && len(f.entries) == cap(f.entries) && f.head >= len(f.entries)/2 {
		// Slide the window down instead of growing the array.
		n := copy(f.entries, f.entries[f.head:])
		clear(f.entries[n:])
		copy(f.lasts, f.lasts[f.head:])
		f.entries, f.lasts, f.head = f.entries[:n], f.lasts[:n], 0
	}
	f.entries = append(f.entries, fl)
	f.lasts = append(f.lasts, 0)
}

// drop forgets the request and returns its prompt buffer.
func (f *flights) drop(id uint64) []int32 {
	fl := f.at(id)
	if fl == nil {
		return nil
	}
	prompt := fl.prompt
	*fl = flightEntry{}
	*f.lastAt(id) = 0
	for f.head < len(f.entries) && !f.entries[f.head].live {
		f.head++
		f.base++
	}
	return prompt
}
