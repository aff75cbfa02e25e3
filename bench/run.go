// Package bench runs a benchmark against an OpenAI-compatible endpoint: it
// releases requests on an open-loop schedule computed up front, caps
// concurrency, runs warmups, streams each finished request's record to disk
// as it arrives, scrapes the server's /metrics, and stops cleanly on
// cancellation. Sending and parsing one request is package client's job.
package bench

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/servebench/servebench/internal/clock"
	"github.com/servebench/servebench/internal/option"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/tokenizer"
	"github.com/servebench/servebench/workload"
)

// Doer sends one request and fills the record; *client.Client is one.
// Do must not return before the request is finished or has failed, and
// records failures in rec rather than returning them.
type Doer interface {
	Do(ctx context.Context, req *workload.Request, requestID string, base time.Time, rec *metrics.Record)
}

// Config is one benchmark run.
type Config struct {
	Client Doer
	// Requests in schedule order; Arrival offsets are from the run start.
	Requests []workload.Request
	// MaxConcurrency caps requests in flight (0: no cap). Arrivals never
	// wait for it: a request due while the cap is full waits in the client
	// queue and the wait is recorded as its queue time.
	MaxConcurrency int
	// Warmups sends this many copies of the first request, through the
	// concurrency cap, before the measured run; their results are discarded.
	Warmups int
	// ReadyCheckTimeout, when positive, retries the first request until it
	// succeeds or the timeout passes, before anything is measured.
	ReadyCheckTimeout time.Duration
	// RequestIDPrefix prefixes each request's x-request-id (index appended).
	RequestIDPrefix string

	// Summary selects percentiles and goodput SLOs.
	Summary metrics.Options
	// Tokenizer counts output tokens for responses that carry no usage.
	Tokenizer tokenizer.Tokenizer
	// Records receives every finished request's record as one JSON line,
	// written as soon as the request finishes, so an interrupted or crashed
	// run keeps what it measured. May be nil.
	Records io.Writer
	// KeepRecords keeps every record (with ITL and text) in the Result, for
	// --save-detailed; without it the Result keeps only light copies.
	KeepRecords bool
	// StartAt, if set, is the wall-clock instant the schedule starts at
	// (--start-at): the pacer waits for it after the ready check, initial
	// test and warmups, and request offsets count from it, so shards of one
	// run started on several machines share a timeline.
	StartAt time.Time
	// Sink, if set, also receives every measured record, after the records
	// file and the summary have it.
	Sink metrics.Sink
	// GracePeriod is how long in-flight requests may finish after ctx is
	// canceled before they are cut off (default 5 s).
	GracePeriod time.Duration
	// Abort, when closed after ctx is canceled (a second Ctrl-C), cuts
	// in-flight requests off at once instead of after GracePeriod. Their
	// records still reach the records file and the summary.
	Abort <-chan struct{}
	// Scraper, if set, scrapes the server's /metrics during the run.
	Scraper *Scraper
	// OnRecord is called after each measured record is accounted for.
	OnRecord func(done, total int)
	Logger   *slog.Logger

	// coarseTimers makes the pacer sleep on runtime timers only, for tests
	// under testing/synctest, whose fake clock a real system call cannot
	// advance.
	coarseTimers bool
}

// Result is what a run measured.
type Result struct {
	Summary metrics.Summary
	// Records holds every measured record (warmups excluded), in completion
	// order; ITL and text are dropped unless Config.KeepRecords.
	Records []metrics.Record
	// Interrupted is true when ctx was canceled before every request ran.
	Interrupted bool
	// NotSent counts requests never sent because the run was interrupted
	// or stopped by a records write error.
	NotSent int
	// SinkErr is the error that stopped the run early when writing a
	// record failed (a full disk): sending stopped, in-flight requests
	// finished, and the summary covers every request measured.
	SinkErr error
	// RecordsKept is how many records the records file holds as whole
	// lines; -1 without a records file.
	RecordsKept   int
	ServerSamples []ServerSample
	Server        *ServerSummary
	// Started is the run's zero instant: Config.StartAt when set, else
	// when pacing began. Record offsets count from it.
	Started time.Time
	// StartLate is how much after Config.StartAt pacing actually began
	// (0 without StartAt).
	StartLate time.Duration
}

// ErrNotReady is returned when the ready check never got a successful
// response.
var ErrNotReady = errors.New("server not ready")

// Run executes the benchmark. It returns an error only when nothing could be
// measured (bad config, ready check failed); per-request failures are
// records, and a records write error stops sending and is reported in
// Result.SinkErr beside everything measured. When ctx is canceled it stops sending,
// lets in-flight requests finish for GracePeriod, and returns the partial
// result marked Interrupted.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Client == nil {
		return nil, errors.New("bench: no client configured")
	}
	if len(cfg.Requests) == 0 {
		return nil, option.New("bench: no requests to send (check {num_prompts} and the dataset)")
	}
	if cfg.GracePeriod <= 0 {
		cfg.GracePeriod = 5 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}

	if cfg.ReadyCheckTimeout > 0 {
		if err := readyCheck(ctx, cfg); err != nil {
			return nil, err
		}
	}
	if cfg.Warmups > 0 {
		warmup(ctx, cfg)
		if ctx.Err() != nil {
			return &Result{Interrupted: true, NotSent: len(cfg.Requests), Summary: metrics.NewAccumulator(cfg.Summary).Summary(0)}, nil
		}
	}
	return measure(ctx, cfg, log)
}

// InitialTestError is a failed initial test request: the server's reason,
// and its HTTP status when one arrived.
type InitialTestError struct {
	Reason string
	Status int
}

func (e *InitialTestError) Error() string { return "initial test request failed: " + e.Reason }

// InitialTest sends the first request once, as vLLM's "initial single
// prompt test run" does, so a wrong model, endpoint or address stops the
// run before anything is measured, with the server's reason. With
// ReadyCheckTimeout set it retries until the server answers instead.
func InitialTest(ctx context.Context, cfg Config) error {
	if cfg.Client == nil || len(cfg.Requests) == 0 {
		return errors.New("bench: initial test needs a client and a request")
	}
	if cfg.ReadyCheckTimeout > 0 {
		return readyCheck(ctx, cfg)
	}
	var rec metrics.Record
	cfg.Client.Do(ctx, &cfg.Requests[0], cfg.RequestIDPrefix+"test", time.Now(), &rec)
	if rec.Success {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	reason := rec.Error
	if reason == "" {
		reason = "unknown error"
	}
	return &InitialTestError{Reason: reason, Status: rec.Status}
}

func readyCheck(ctx context.Context, cfg Config) error {
	deadline := time.Now().Add(cfg.ReadyCheckTimeout)
	var last metrics.Record
	for attempt := 0; ; attempt++ {
		last = metrics.Record{}
		cfg.Client.Do(ctx, &cfg.Requests[0], cfg.RequestIDPrefix+"ready-"+strconv.Itoa(attempt), time.Now(), &last)
		if last.Success {
			return nil
		}
		if ctx.Err() != nil || time.Now().Add(time.Second).After(deadline) {
			return option.Errorf("%w after %s: last attempt: %s (raise {ready_check_timeout_sec} or check the server)", ErrNotReady, cfg.ReadyCheckTimeout, last.Error)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func warmup(ctx context.Context, cfg Config) {
	sem := newSemaphore(cfg.MaxConcurrency)
	var wg sync.WaitGroup
	base := time.Now()
	for i := range cfg.Warmups {
		if err := sem.acquire(ctx); err != nil {
			break
		}
		wg.Go(func() {
			defer sem.release()
			var rec metrics.Record
			cfg.Client.Do(ctx, &cfg.Requests[0], cfg.RequestIDPrefix+"warmup-"+strconv.Itoa(i), base, &rec)
		})
	}
	wg.Wait()
}

// semaphore is a counting semaphore; a nil one never blocks.
type semaphore chan struct{}

func newSemaphore(n int) semaphore {
	if n <= 0 {
		return nil
	}
	return make(semaphore, n)
}

func (s semaphore) acquire(ctx context.Context) error {
	if s == nil {
		return nil
	}
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s semaphore) release() {
	if s != nil {
		<-s
	}
}

// graceContext is the in-flight requests' context: they outlive ctx by
// the grace period, canceled grace after ctx is, or at once on abort. stop
// releases it.
func graceContext(ctx context.Context, grace time.Duration, abort <-chan struct{}) (reqCtx context.Context, stop func()) {
	reqCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	stopGrace := context.AfterFunc(ctx, func() {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
			cancelRequests()
		case <-abort:
			cancelRequests()
		case <-reqCtx.Done():
		}
	})
	return reqCtx, func() {
		stopGrace()
		cancelRequests()
	}
}

func measure(ctx context.Context, cfg Config, log *slog.Logger) (*Result, error) {
	reqCtx, stopRequests := graceContext(ctx, cfg.GracePeriod, cfg.Abort)
	defer stopRequests()
	// Sending stops on ctx or when a record cannot be written; only ctx
	// marks the run interrupted.
	sendCtx, stopSending := context.WithCancel(ctx)
	defer stopSending()

	keep := metrics.KeepLight
	if cfg.KeepRecords {
		keep = metrics.KeepFull
	}
	var records *metrics.JSONLWriter
	if cfg.Records != nil {
		// Unbuffered: a crash or Ctrl-C keeps every finished request.
		records = metrics.NewJSONLWriter(cfg.Records)
	}
	recorder := metrics.NewRecorder(cfg.Summary, records, keep)
	sink := metrics.Tee(recorder, cfg.Sink)
	done := make(chan *metrics.Record, 256)
	collected := make(chan error, 1)
	go func() { collected <- collect(cfg, sink, stopSending, done, log) }()

	// Runtime timers alone fire up to 1 ms late in a mostly idle process,
	// which would be send lag; the sleeper finishes each wait in nanosleep.
	sleeper := clock.NewSleeper(cfg.coarseTimers)
	defer sleeper.Stop()
	base, late := startInstant(sendCtx, sleeper, cfg.StartAt)

	var scrapeWG sync.WaitGroup
	scrapeCtx, stopScrape := context.WithCancel(sendCtx)
	if cfg.Scraper != nil {
		scrapeWG.Go(func() { cfg.Scraper.Run(scrapeCtx, base) })
	}

	// The pacer releases requests as they fall due, without ever waiting
	// for the concurrency cap (a wait there would be send lag); one sender
	// starts them in that order as the cap allows.
	due := make(chan dueRequest, len(cfg.Requests))
	var inflight sync.WaitGroup
	sent := make(chan int, 1)
	go func() {
		sent <- startInOrder(sendCtx, reqCtx, cfg, base, due, &inflight, done)
	}()
	for i := range cfg.Requests {
		at := base.Add(cfg.Requests[i].Arrival)
		if !sleeper.Until(sendCtx, func() time.Duration { return time.Until(at) }) {
			break
		}
		due <- dueRequest{index: i, dispatched: time.Since(base)}
	}
	close(due)
	started := <-sent
	inflight.Wait()
	duration := time.Since(base)
	close(done)
	stopScrape()
	scrapeWG.Wait()
	sinkErr := <-collected

	res := &Result{
		Summary:     recorder.Summary(duration),
		Records:     recorder.Records(),
		Interrupted: ctx.Err() != nil,
		NotSent:     len(cfg.Requests) - started,
		SinkErr:     sinkErr,
		RecordsKept: recorder.RecordsKept(),
		Started:     base,
		StartLate:   late,
	}
	if cfg.Scraper != nil {
		res.ServerSamples = cfg.Scraper.Samples()
		if len(res.ServerSamples) > 0 {
			s := SummarizeServer(res.ServerSamples)
			res.Server = &s
		}
	}
	return res, nil
}

// dueRequest is a request the pacer released and when.
type dueRequest struct {
	index      int
	dispatched time.Duration
}

// startInOrder starts each released request once the concurrency cap
// allows, first released first started, and returns how many it started.
// The goroutine of one request is running before the next is created: the
// runtime runs the newest goroutine first, so goroutines racing for the cap
// sent the last request of a burst first (vLLM's client keeps the order).
// A request still waiting when sending stops never reaches the server and
// is neither a success nor a failure.
func startInOrder(sendCtx, reqCtx context.Context, cfg Config, base time.Time, due <-chan dueRequest, inflight *sync.WaitGroup, done chan<- *metrics.Record) int {
	sem := newSemaphore(cfg.MaxConcurrency)
	// Buffered, so a request's goroutine never blocks on saying it runs:
	// blocked there, it would be readied behind the goroutines started
	// after it.
	running := make(chan struct{}, 1)
	started := 0
	for d := range due {
		if sendCtx.Err() != nil || sem.acquire(sendCtx) != nil {
			break
		}
		req := &cfg.Requests[d.index]
		inflight.Go(func() {
			running <- struct{}{}
			defer sem.release()
			rec := &metrics.Record{Index: req.Index, Scheduled: req.Arrival, Dispatched: d.dispatched}
			id := ""
			if cfg.RequestIDPrefix != "" {
				id = cfg.RequestIDPrefix + strconv.Itoa(req.Index)
			}
			cfg.Client.Do(reqCtx, req, id, base, rec)
			rec.Index, rec.Scheduled, rec.Dispatched = req.Index, req.Arrival, d.dispatched
			done <- rec
		})
		<-running
		started++
	}
	return started
}

// startInstant waits for startAt (zero: start now) and returns the run's
// zero instant and how late the wait ended. The zero is the planned
// instant even when the process got there late, so arrival offsets keep
// their meaning on the shared timeline and the lateness shows as send lag
// of the overdue requests instead of being hidden by a shifted schedule.
func startInstant(ctx context.Context, sleeper *clock.Sleeper, startAt time.Time) (time.Time, time.Duration) {
	if startAt.IsZero() {
		return time.Now(), 0
	}
	// Interrupted while waiting: the send loop sees ctx done and sends nothing.
	sleeper.Until(ctx, func() time.Duration { return time.Until(startAt) })
	now := time.Now()
	// Round(0) drops the monotonic reading, so the difference is on the
	// wall clock, the clock startAt was given on.
	late := max(now.Round(0).Sub(startAt), 0)
	return now.Add(-late), late
}

// collect is the single consumer of finished records: it fills in output
// token counts that need the tokenizer (off the requests' path) and hands
// each record to the sink. The first sink error stops sending; records of
// requests still in flight go on reaching the summary.
func collect(cfg Config, sink metrics.Sink, stopSending context.CancelFunc, done <-chan *metrics.Record, log *slog.Logger) error {
	var firstErr error
	n := 0
	for rec := range done {
		if rec.Success && rec.OutputLenSource == "chunks" && cfg.Tokenizer != nil {
			if count, err := tokenizer.Count(context.Background(), cfg.Tokenizer, rec.GeneratedText); err == nil {
				rec.OutputLen, rec.OutputLenSource = count, "tokenizer"
			} else {
				log.Warn("counting output tokens failed; keeping the chunk count", "request", rec.Index, "err", err)
			}
		}
		if err := sink.Add(rec); err != nil && firstErr == nil {
			firstErr = err
			stopSending()
			log.Error("writing a record failed: sending stopped, waiting for requests in flight", "err", err)
		}
		n++
		if cfg.OnRecord != nil {
			cfg.OnRecord(n, len(cfg.Requests))
		}
	}
	if err := sink.Close(); err != nil && firstErr == nil {
		firstErr = err
	}
	return firstErr
}
