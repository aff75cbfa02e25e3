package serve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/internal/clock"
	names "github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/vllm"
)

// maxClockDebt bounds how far the step loop may run behind the model's
// timeline. While it is within the bound the next step starts when the
// previous one was due (so a late timer wake-up or a slow delivery does not
// stretch the emulated GPU's timeline, and throughput stays at the model's);
// beyond it the loop cannot keep up at all (a zero-time model) and the
// timeline restarts from the wall clock.
const maxClockDebt = 20 * time.Millisecond

// idleRetry re-polls an engine that reports nothing to run although it is
// not idle. The engine's decisions only change with time under V0's
// scheduler_delay_factor, which cannot hold back a step while nothing runs,
// so this is a guard against a stuck engine rather than a normal path.
const idleRetry = 5 * time.Millisecond

// driver is the state of the step loop; only the Run goroutine touches it.
type driver struct {
	s       *Server
	eng     *engine.Engine
	streams map[uint64]*stream

	inbox    []*stream
	aborts   []*stream
	commands []func(*driver)
	// ingestNext is when the oldest request still in its Ingest
	// (Config.Ingest) reaches the engine; ingestPending says there is one.
	ingestNext    time.Duration
	ingestPending bool
	// quiet: streams are woken by the deliverer, Config.Delivery after
	// their step, not by the loop; handOffs collects a step's streams.
	quiet    bool
	handOffs []*stream
	// firstHandOffs: the step's streams whose first token it made.
	firstHandOffs []*stream
	// outLoop is the API server's event loop, which chunks pass on their
	// way to the client when quiet (perf.OutputLoop, as in sim);
	// laggedLoop is its work on the lagged step's outputs.
	outLoop    perf.OutputLoop
	laggedLoop perf.OutputWork
	// woken collects the streams deliver signals when not quiet.
	woken []*stream

	prev engineSample

	modelTime, busyWall time.Duration
	// busy says a busy period is under way, since engine clock
	// periodStart and wall time periodWall (endBusyPeriod).
	busy        bool
	periodStart time.Duration
	periodWall  time.Time
	clockResets int64
	// behind is how far the model's timeline was pushed back in total;
	// intervalLag and intervalBehind cover the current stats interval.
	behind         time.Duration
	intervalLag    *lagHistogram
	intervalBehind time.Duration

	// Async output processing (Config.AsyncOutputLag, one batch in
	// flight): lagged holds the last step's outputs until the next step
	// ends, from the step that started at laggedStart; lagging says they
	// are pending.
	lag         bool
	lagged      []engine.Output
	laggedStart time.Duration
	lagging     bool

	// Multi-step scheduling (Config.SchedulerSteps, V0 without pipeline
	// parallelism; sim's runner does the same): group places each step
	// in its group and holds the outputs that have not gone out;
	// laggedGroupEnd says the lagged step ended its group. With
	// AsyncOutputLag a group's intermediate step returns to
	// vLLM's engine loop once launched, and the lagged step's outputs,
	// processed in its callback, go out then: launchPending says they go
	// out at launchAt, launchPythonised whether the step that processes
	// them is host-bound (so the lagged step was pythonised early).
	group          engine.MultiStepGroup
	laggedGroupEnd bool
	// hostAware is the step model when it says which steps the host
	// decided, needed only for multi-step groups under AsyncOutputLag.
	hostAware        perf.HostAwareModel
	jit              *vllm.JITCache // cfg.ColdStart's compiled kernels
	launchPending    bool
	launchAt         time.Duration
	launchPythonised bool

	statsEvery   time.Duration
	statsAt      time.Duration // engine clock of the last stats line
	statsPrev    engine.Stats
	prefixWindow statsWindow
}

// Run drives the engine on the wall clock until ctx is done: it takes new
// requests and aborts between steps, asks the engine for a step, waits (one
// timer) until the step model says the step is over, and releases every
// token of the step at once. It returns nil when ctx is cancelled, and an
// error if called twice.
func (s *Server) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("serve: Run called twice on one Server")
	}
	d := s.startDriver()
	defer d.shutdown()

	timer := time.NewTimer(time.Hour) // idle waits for new requests
	timer.Stop()
	defer timer.Stop()
	// wait sleeps until the engine clock reaches until.
	sleeper := clock.NewSleeper(s.coarseClock)
	defer sleeper.Stop()
	wait := func(until time.Duration) bool {
		return sleeper.Until(ctx, func() time.Duration { return until - s.now() })
	}

	var clock time.Duration // engine clock of the next step start
	// With pipeline parallelism up to depth batches are in flight, oldest
	// first; without, one step at a time.
	depth := d.eng.MaxBatches()
	virtualEngines := depth > 1 && d.eng.Config().Version == engine.V0
	d.setOutputTiming(depth)
	d.jit = d.s.cfg.ColdStart.NewCache()
	var pipe perf.Pipeline
	var inPipe []servedBatch
	for ctx.Err() == nil {
		if !d.busy {
			clock = s.now()
		}
		d.drain(clock)
		inPipe = d.fillPipeline(inPipe, &pipe, depth, clock)
		if len(inPipe) == 0 && d.lagging {
			// No step follows: vLLM runs the sequences that just finished
			// once more while it processes their outputs, then returns them.
			due := clock + d.drainStep()
			if !wait(due) {
				break
			}
			clock = d.completeLagged(due)
			continue
		}
		if len(inPipe) == 0 {
			d.endBusyPeriod(clock)
			d.observe()
			d.maybeLogStats(clock)
			if !d.idleWait(ctx, timer) {
				break
			}
			continue
		}
		d.beginBusyPeriod(clock)
		if d.launchPending {
			if !wait(d.launchAt) {
				break
			}
			d.deliverLaunched()
		}
		head := inPipe[0]
		due := head.due
		if virtualEngines && len(inPipe) < depth {
			// A V0 virtual engine with no batch in flight takes a new
			// request at once; V1's engine core waits for its oldest batch.
			poked, ok := d.waitOrWake(ctx, timer, sleeper, due)
			if !ok {
				break
			}
			if poked {
				clock = max(clock, s.now())
				continue
			}
		} else if !wait(due) {
			break
		}
		inPipe = append(inPipe[:0], inPipe[1:]...)
		clock = d.completeBatch(head)
	}
	d.endBusyPeriod(clock)
	return nil
}

// setOutputTiming arranges when steps' tokens go out: V0's async output
// processing and multi-step groups, both without pipeline parallelism
// only (depth 1), as in sim.
func (d *driver) setOutputTiming(depth int) {
	cfg := &d.s.cfg
	d.lag = cfg.AsyncOutputLag && depth == 1
	if cfg.SchedulerSteps > 1 && d.eng.Config().Version == engine.V0 && depth == 1 {
		d.group.Steps = cfg.SchedulerSteps
		if d.lag {
			d.hostAware, _ = cfg.StepModel.(perf.HostAwareModel)
		}
	}
}

// startDriver starts the step loop's state: the deliverer when chunks
// wait out Config.Delivery, and the startup lines logged.
func (s *Server) startDriver() *driver {
	d := &driver{s: s, eng: s.eng, streams: make(map[uint64]*stream), statsEvery: s.cfg.StatsInterval, intervalLag: new(lagHistogram)}
	if d.quiet = s.cfg.Delivery > 0; d.quiet {
		d.outLoop = perf.NewOutputLoop(s.cfg.StepModel)
		go s.deliverer.run(s.stopped)
	}
	for _, line := range s.StartupLines() {
		s.log.Info(line)
	}
	close(s.logged)
	return d
}

// fillPipeline schedules steps at clock until depth batches are in flight
// or the engine has nothing to run, failing the requests it rejects.
func (d *driver) fillPipeline(inPipe []servedBatch, pipe *perf.Pipeline, depth int, clock time.Duration) []servedBatch {
	for len(inPipe) < depth {
		if d.group.Grouping() {
			d.eng.HoldAdmissions(d.group.Open())
		}
		step := d.eng.Schedule(clock)
		d.fail(step.Rejected, clock)
		d.flushHandOffs(clock, clock)
		if step.Empty() {
			if d.group.Open() {
				// Every request of the group finished before its end.
				d.endGroupEarly(clock)
				continue
			}
			break
		}
		b := servedBatch{step: step, start: clock, loop: d.outLoop.Work(step.Shape)}
		b.due, b.hostBound = d.batchDue(pipe, depth, clock, step)
		if d.group.Grouping() {
			b.cont, b.open = d.group.Place(step.Shape)
			if d.lagging && b.open {
				d.launchPending, d.launchAt, d.launchPythonised = true, clock+perf.LaunchTime(d.s.cfg.StepModel, step.Shape), b.hostBound
			}
		}
		inPipe = append(inPipe, b)
	}
	return inPipe
}

// endGroupEarly ends a multi-step group whose requests all finished
// before its last step: its held outputs go out now, or with the lagged
// step's, whose processing then ends the group.
func (d *driver) endGroupEarly(clock time.Duration) {
	d.group.End()
	if d.lagging {
		d.laggedGroupEnd = true
		return
	}
	out := d.through(clock, perf.OutputWork{})
	d.deliver(d.group.Release(), clock, clock, out)
	d.flushHandOffs(out.chunks, out.first)
}

// deliverLaunched hands on, at launchAt, the lagged outputs that the
// group's intermediate step just launched has processed.
func (d *driver) deliverLaunched() {
	d.launchPending = false
	out := d.deliverLagged(d.launchAt, d.launchPythonised)
	d.flushHandOffs(out.chunks, out.first)
}

// endBusyPeriod adds a busy period's wall time and model time, whose
// ratio tells whether the host kept up with the model.
func (d *driver) endBusyPeriod(clock time.Duration) {
	if !d.busy {
		return
	}
	d.busy = false
	d.busyWall += time.Since(d.periodWall)
	d.modelTime += clock - d.periodStart
}

// beginBusyPeriod starts a busy period at engine clock clock, unless one
// is under way.
func (d *driver) beginBusyPeriod(clock time.Duration) {
	if !d.busy {
		d.busy, d.periodStart, d.periodWall = true, clock, time.Now()
	}
}

// completeBatch releases the tokens of a batch whose time is up and
// returns the engine clock for the next step: the batch's due time, or now
// when the loop fell more than maxClockDebt behind.
func (d *driver) completeBatch(b servedBatch) time.Duration {
	s, due := d.s, b.due
	s.wakeLag.record(s.now()-due, 1)
	if h := s.metrics.iterationTokens; h != nil {
		h.Observe(float64(b.step.Shape.Tokens()))
	}
	outs := d.eng.Complete(b.step)
	if s.slowHost != nil {
		s.slowHost()
	}
	out := chunksOut{due, due} // when the step's chunks go out
	switch {
	case d.lag:
		// The previous step's outputs go out as this one ends; this
		// step's wait for the next. A group's last step pythonises every
		// step of the group, blocking, and processes the ones before it
		// (MultiStepModelRunner._final_process_outputs).
		out = d.deliverLagged(due, b.hostBound || (b.cont && !b.open))
		d.lagged = append(d.lagged[:0], outs...)
		d.laggedStart, d.lagging, d.laggedLoop = b.start, true, b.loop
		d.laggedGroupEnd = !b.open
	case d.group.Grouping():
		// The group's chunk goes out when its last step ends.
		d.noteScheduled(outs, b.start)
		d.group.Hold(outs)
		if !b.open {
			out = d.through(due, b.loop)
			d.deliver(d.group.Release(), b.start, due, out)
		}
	default:
		out = d.through(due, b.loop)
		d.deliver(outs, b.start, due, out)
	}
	d.flushHandOffs(out.chunks, out.first)
	d.observeLag(s.now() - due)
	d.observe()
	d.maybeLogStats(due)
	return d.nextClock(due)
}

// nextClock is the engine clock for the step after one due at due: due,
// or now when the loop fell more than maxClockDebt behind.
func (d *driver) nextClock(due time.Duration) time.Duration {
	if now := d.s.now(); now-due > maxClockDebt {
		d.clockResets++
		d.fellBehind(now - due)
		return now
	}
	return due
}

// deliverLagged hands the lagged step's outputs to their streams at due,
// and returns when their chunks go out (through the API server's loop).
// In a multi-step group they join the group's held outputs, which go out
// when the lagged step ended the group (or with MultiStepStream); before
// that only the requests the group finished go out, and only when the
// steps were pythonised (as sim's runner.deliverLagged says).
func (d *driver) deliverLagged(due time.Duration, pythonised bool) chunksOut {
	if !d.lagging {
		return chunksOut{due, due}
	}
	d.lagging = false
	if !d.group.Grouping() {
		out := d.through(due, d.laggedLoop)
		d.deliver(d.lagged, d.laggedStart, due, out)
		return out
	}
	d.noteScheduled(d.lagged, d.laggedStart)
	handed, handOn := d.group.HandOnLagged(d.lagged, d.laggedGroupEnd, d.s.cfg.MultiStepStream, pythonised)
	if !handOn {
		return chunksOut{due, due}
	}
	out := d.through(due, d.laggedLoop.Finished(len(handed), len(d.lagged)))
	d.deliver(handed, d.laggedStart, due, out)
	return out
}

// chunksOut is when a step's chunks go out: the first tokens', and the
// others' (perf.OutputLoop.Through).
type chunksOut struct{ chunks, first time.Duration }

// through hands the API server's loop a step's outputs at due.
func (d *driver) through(due time.Duration, w perf.OutputWork) chunksOut {
	chunks, first := d.outLoop.Through(due, w)
	return chunksOut{chunks, first}
}

// completeLagged delivers the lagged outputs after the drain step that
// ended at due, and returns the engine clock for the next step, as
// completeBatch does.
func (d *driver) completeLagged(due time.Duration) time.Duration {
	out := d.deliverLagged(due, false)
	d.flushHandOffs(out.chunks, out.first)
	d.observe()
	return d.nextClock(due)
}

// drainStep is the extra decode vLLM runs, with no step following, over
// the sequences whose outputs are lagged and finished
// (engine.FinishedDecodes, as sim's runner); none after a multi-step
// group, whose steps do not wait for their outputs.
func (d *driver) drainStep() time.Duration {
	if d.group.Grouping() {
		return 0
	}
	s := engine.FinishedDecodes(d.lagged, func(id uint64) (int, bool) {
		if st := d.streams[id]; st != nil {
			return st.req.PromptLen, true
		}
		return 0, false
	})
	if s.Decodes == 0 {
		return 0
	}
	return d.stepTime(s)
}

// servedBatch is a step in flight: the engine clock it was scheduled at
// and when its tokens are due. In a multi-step group, cont says the step
// continues the open group and open that the group goes on after it
// (engine.MultiStepGroup.Place); hostBound that host work set its time
// (known only where multi-step output timing needs it).
type servedBatch struct {
	step       *engine.Step
	start, due time.Duration
	cont, open bool
	hostBound  bool
	loop       perf.OutputWork // the API server's work on its outputs
}

// batchDue is when a step scheduled at clock is over: after its step time,
// and with pipeline parallelism once the pipeline could take it.
func (d *driver) batchDue(pipe *perf.Pipeline, depth int, clock time.Duration, step *engine.Step) (due time.Duration, hostBound bool) {
	var latency time.Duration
	if d.hostAware != nil {
		latency, hostBound = d.hostAware.StepTimeHost(step.Shape)
	} else {
		latency = d.stepTime(step.Shape)
	}
	if c := d.jit.Compile(step.Shape); c > 0 {
		latency, hostBound = latency+c, true
	}
	if depth == 1 {
		return clock + latency, hostBound
	}
	return pipe.Enter(clock, latency, perf.StageTime(d.s.cfg.StepModel, step.Shape, depth)), hostBound
}

// waitOrWake sleeps until the engine clock reaches until, like the step
// loop's wait, but returns early (poked) when a handler queues a request,
// abort or command. ok is false when ctx ended.
func (d *driver) waitOrWake(ctx context.Context, timer *time.Timer, sleeper *clock.Sleeper, until time.Duration) (poked, ok bool) {
	s := d.s
	// A request whose Ingest ends first wakes the loop as a new one does.
	ingest := d.ingestPending && d.ingestNext < until
	if ingest {
		until = d.ingestNext
	}
	for {
		delay := until - s.now()
		if !s.coarseClock {
			delay -= clock.PreciseWindow
		}
		if delay <= 0 {
			return ingest, sleeper.Until(ctx, func() time.Duration { return until - s.now() })
		}
		timer.Reset(delay)
		select {
		case <-s.wake:
			timer.Stop()
			return true, true
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return false, false
		}
	}
}

// idleWait blocks until a request, abort or command arrives, the next stats
// line is due, or ctx ends. It reports false when ctx ended.
func (d *driver) idleWait(ctx context.Context, timer *time.Timer) bool {
	s := d.s
	var wakeAt time.Duration = -1
	if d.statsEvery > 0 {
		wakeAt = d.statsAt + d.statsEvery
	}
	if !d.eng.Idle() && (wakeAt < 0 || s.now()+idleRetry < wakeAt) {
		wakeAt = s.now() + idleRetry
	}
	if d.ingestPending && (wakeAt < 0 || d.ingestNext < wakeAt) {
		wakeAt = d.ingestNext
	}
	if wakeAt >= 0 {
		timer.Reset(max(wakeAt-s.now(), 0))
		defer timer.Stop()
	}
	select {
	case <-s.wake:
	case <-timer.C:
	case <-ctx.Done():
		return false
	}
	return true
}

// drain takes what handlers queued: new requests whose Ingest has passed
// by clock join the engine in the order they were sent, then aborts leave
// it, then commands run.
func (d *driver) drain(clock time.Duration) {
	s := d.s
	s.mu.Lock()
	if s.cfg.delaysArrival() {
		// Arrivals are in inbox order: one Ingest after each hand-off
		// from the event loop.
		k := 0
		for ; k < len(s.inbox); k++ {
			st := s.inbox[k]
			if st.handOffPending {
				if st.prepared > clock {
					break
				}
				s.resolveHandOff(k)
			}
			if st.req.Arrival > clock {
				break
			}
		}
		d.inbox = append(d.inbox[:0], s.inbox[:k]...)
		n := copy(s.inbox, s.inbox[k:])
		clear(s.inbox[n:])
		s.inbox = s.inbox[:n]
		s.handOffScan = max(s.handOffScan-k, 0)
		d.ingestPending = n > 0
		if d.ingestPending {
			head := s.inbox[0]
			d.ingestNext = head.req.Arrival
			if head.handOffPending {
				d.ingestNext = head.prepared // its hand-off is known then
			}
		}
	} else {
		d.inbox, s.inbox = s.inbox, d.inbox[:0]
	}
	d.aborts, s.aborts = s.aborts, d.aborts[:0]
	d.commands, s.commands = s.commands, d.commands[:0]
	s.mu.Unlock()

	for i, st := range d.inbox {
		d.inbox[i] = nil
		if st.abortSent.Load() {
			st.finish(errAborted)
			continue
		}
		if err := d.eng.Add(st.req); err != nil {
			st.finish(err)
			continue
		}
		d.streams[st.req.ID] = st
	}
	for i, st := range d.aborts {
		d.aborts[i] = nil
		if _, ok := d.streams[st.req.ID]; !ok {
			continue
		}
		d.eng.Abort(st.req.ID)
		delete(d.streams, st.req.ID)
		st.finish(errAborted)
		d.observeFinished(st, clock, finishAbort)
	}
	for i, fn := range d.commands {
		d.commands[i] = nil
		fn(d)
	}
}

var errAborted = errors.New("request aborted by the client")

// deliver hands a completed step's tokens to their streams: the step ended
// at due (the engine's timeline, and the server's metrics), its chunks go
// out as out says (perf.OutputLoop). A stream's handler is woken without
// blocking: a slow reader only accumulates a backlog in its own stream.
func (d *driver) deliver(outs []engine.Output, start, due time.Duration, out chunksOut) {
	for i := range outs {
		o := &outs[i]
		st := d.streams[o.ID]
		if st == nil {
			continue
		}
		d.noteScheduledStream(st, o, start)
		first := o.NewTokens > 0 && st.generated == 0
		if o.NewTokens > 0 {
			if first {
				st.firstDue = due
				d.s.metrics.observeTTFT((due - st.req.Arrival).Seconds())
				if st.computed != nil {
					st.computed()
				}
			} else {
				gap := (due - st.lastDue).Seconds()
				d.s.metrics.observeITL(gap)
				for k := 1; k < o.NewTokens; k++ {
					d.s.metrics.observeITL(0)
				}
			}
			st.lastDue = due
			st.generated += o.NewTokens
		}
		at := out.chunks
		if first {
			at = out.first
		}
		st.push(at, o, true)
		d.handOff(st, first)
		if !d.quiet {
			d.woken = append(d.woken, st)
		}
		if o.Finished {
			delete(d.streams, o.ID)
			if o.Err != nil {
				d.noteEngineError(o.Err)
			}
			d.observeFinished(st, due, st.finishReason())
		}
	}
	// Woken after the loop, so that a handler takes every output a
	// stream got here at once: a multi-step group's outputs for one
	// request are one chunk.
	for k, st := range d.woken {
		st.signal()
		d.woken[k] = nil
	}
	d.woken = d.woken[:0]
}

// noteScheduled records, for streams first scheduled in a step that
// started at start, that they were, as deliver does for outputs that go
// out at once: a multi-step group's outputs wait, but the step's start
// is its own.
func (d *driver) noteScheduled(outs []engine.Output, start time.Duration) {
	for i := range outs {
		if st := d.streams[outs[i].ID]; st != nil {
			d.noteScheduledStream(st, &outs[i], start)
		}
	}
}

func (d *driver) noteScheduledStream(st *stream, o *engine.Output, start time.Duration) {
	if !st.scheduled {
		st.scheduled, st.scheduledAt = true, start
		st.cached = o.CachedTokens
		d.prefixWindow.add(int64(st.req.PromptLen), int64(o.CachedTokens))
	}
}

// fail ends requests the scheduler gave up on.
func (d *driver) fail(rejected []engine.Output, clock time.Duration) {
	for _, o := range rejected {
		st := d.streams[o.ID]
		if st == nil {
			continue
		}
		delete(d.streams, o.ID)
		st.push(clock, &o, d.quiet)
		d.handOff(st, false)
		d.noteEngineError(o.Err)
		d.observeFinished(st, clock, finishLength)
	}
}

// noteEngineError marks the server dead when the engine died: like vLLM's
// AsyncEngineDeadError, every later request fails.
func (d *driver) noteEngineError(err error) {
	if !errors.Is(err, engine.ErrNoSwapSpace) {
		return
	}
	s := d.s
	s.mu.Lock()
	if s.deadErr == nil {
		s.deadErr = err
		s.log.Error("Engine died: " + err.Error())
	}
	s.mu.Unlock()
}

// observeLag records how late a step's tokens were released against the
// model's timeline.
func (d *driver) observeLag(lag time.Duration) {
	lag = max(lag, 0)
	d.s.stepLag.record(lag, 1)
	d.intervalLag.record(lag, 1)
	d.s.metrics.stepLag.Observe(lag.Seconds())
}

// fellBehind records that the timeline restarted from the wall clock,
// debt later than the model: the emulated run is that much longer.
func (d *driver) fellBehind(debt time.Duration) {
	d.behind += debt
	d.intervalBehind += debt
	d.s.metrics.stepBehind.Add(debt.Seconds())
}

func (d *driver) observe() {
	cur := engineSample{stats: d.eng.Stats(), kvUsage: d.eng.KVUsage()}
	d.s.metrics.observeEngine(&cur, &d.prev)
	d.prev = cur
}

func (d *driver) observeFinished(st *stream, end time.Duration, reason string) {
	d.s.metrics.observeRequest(&requestTimes{
		arrival:      st.req.Arrival.Seconds(),
		scheduled:    st.scheduledAt.Seconds(),
		firstToken:   st.firstDue.Seconds(),
		lastToken:    st.lastDue.Seconds(),
		end:          end.Seconds(),
		promptTokens: st.req.PromptLen,
		genTokens:    st.generated,
		maxTokens:    st.limit,
		reason:       reason,
	})
}

func (d *driver) maybeLogStats(now time.Duration) {
	if d.statsEvery <= 0 || now-d.statsAt < d.statsEvery {
		return
	}
	cur := d.prev.stats
	cfg := d.eng.Config()
	line := engine.StatsLine{
		Version:          cfg.Version,
		Elapsed:          now - d.statsAt,
		PromptTokens:     cur.PromptTokens - d.statsPrev.PromptTokens,
		GenerationTokens: cur.GenerationTokens - d.statsPrev.GenerationTokens,
		Running:          cur.Running,
		Waiting:          cur.Waiting,
		Swapped:          cur.Swapped,
		GPUUsage:         d.prev.kvUsage,
		PrefixCaching:    cfg.EnablePrefixCaching,
		// V1 logs the rate over recent requests, V0 the cumulative one.
		PrefixHitRate: d.prefixWindow.hitRate(),
	}
	if cfg.Version == engine.V0 {
		line.PrefixHitRate = ratio(cur.PrefixHits, cur.PrefixQueries)
	}
	if cur.CPUBlocksTotal > 0 {
		line.CPUUsage = float64(cur.CPUBlocksUsed) / float64(cur.CPUBlocksTotal)
	}
	m := d.s.metrics
	if m.avgPromptTput != nil {
		pt, gt := line.Throughputs()
		m.avgPromptTput.Set(pt)
		m.avgGenTput.Set(gt)
	}
	lines := line.Lines()
	lag := d.intervalLag.stats()
	for i, l := range lines {
		var attrs []any
		if i == len(lines)-1 && lag.Tokens > 0 {
			// The step loop's own figures ride on the stats line as
			// key=value attributes after vLLM's text, which stays intact
			// for tools that parse it.
			attrs = []any{"step_lag_p50_ms", fmt.Sprintf("%.2f", ms(lag.P50)), "step_lag_p99_ms", fmt.Sprintf("%.2f", ms(lag.P99)),
				"step_lag_max_ms", fmt.Sprintf("%.2f", ms(lag.Max)), "behind_ms", fmt.Sprintf("%.1f", ms(d.intervalBehind))}
		}
		if line.Idle() {
			d.s.log.Debug(l, attrs...)
		} else {
			d.s.log.Info(l, attrs...)
		}
	}
	if warning := lagWarning(lag.P99, d.intervalBehind, now-d.statsAt); lag.Tokens > 0 && warning != "" {
		d.s.log.Warn(warning)
	}
	d.intervalLag, d.intervalBehind = new(lagHistogram), 0
	d.statsAt, d.statsPrev = now, cur
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// lagWarning says when the step loop fell behind the model by more than
// names.StepLoopLagP99Limit at p99 or names.StepLoopBehindShareLimit of
// the period, or returns "".
func lagWarning(p99, behind, period time.Duration) string {
	p99Limit := time.Duration(names.StepLoopLagP99Limit * float64(time.Second))
	share := 0.0
	if period > 0 {
		share = float64(behind) / float64(period)
	}
	if p99 <= p99Limit && share <= names.StepLoopBehindShareLimit {
		return ""
	}
	return fmt.Sprintf("The emulator fell behind the engine model: step-loop lag p99 %.2f ms (limit %.0f ms), %.1f ms behind in %.1f s (%.2f%%, limit %.0f%%). Token timings include this host's delays: free CPU or lower the load.",
		ms(p99), ms(p99Limit), ms(behind), period.Seconds(), 100*share, 100*names.StepLoopBehindShareLimit)
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// shutdown ends every request still known when Run returns.
func (d *driver) shutdown() {
	s := d.s
	s.mu.Lock()
	s.closed = true
	pending := s.inbox
	s.inbox, s.aborts, s.commands = nil, nil, nil
	s.mu.Unlock()
	for _, st := range pending {
		st.finish(errServerClosed)
	}
	for id, st := range d.streams {
		d.eng.Abort(id)
		st.finish(errServerClosed)
	}
	clear(d.streams)
	if s.kv != nil {
		s.kv.closeIdle()
	}
	close(s.stopped)
}
