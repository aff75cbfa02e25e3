package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/workload"
)

// fakeServer streams OutputLen tokens: the first after ttft, the rest every
// itl, on whatever clock is running (synctest's fake clock in these tests).
type fakeServer struct {
	ttft, itl time.Duration
	fail      func(i int) string // non-empty: fail request i with this error
	inflight  atomic.Int64
	peak      atomic.Int64
	calls     atomic.Int64
}

func (f *fakeServer) Do(ctx context.Context, req *workload.Request, id string, base time.Time, rec *metrics.Record) {
	f.calls.Add(1)
	n := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	rec.Start = time.Since(base)
	rec.RequestID = id
	rec.MaxTokens = req.MaxTokens
	rec.PromptLen = req.PromptLen
	if f.fail != nil {
		if msg := f.fail(req.Index); msg != "" {
			rec.Error = msg
			return
		}
	}
	sleep := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			rec.Error = "canceled"
			rec.Latency = time.Since(base) - rec.Start
			return false
		case <-t.C:
			return true
		}
	}
	if !sleep(f.ttft) {
		return
	}
	rec.TTFT = time.Since(base) - rec.Start
	for range req.MaxTokens - 1 {
		if !sleep(f.itl) {
			return
		}
		rec.ITL = append(rec.ITL, f.itl)
	}
	rec.Latency = time.Since(base) - rec.Start
	rec.OutputLen, rec.OutputLenSource = req.MaxTokens, "usage"
	rec.GeneratedText = "x"
	rec.Success = true
}

func requests(n int, gap time.Duration) []workload.Request {
	reqs := make([]workload.Request, n)
	for i := range reqs {
		reqs[i] = workload.Request{Index: i, Prompt: "hi", PromptLen: 10, MaxTokens: 5, Arrival: time.Duration(i) * gap}
	}
	return reqs
}

func TestOpenLoopScheduleAndMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeServer{ttft: 50 * time.Millisecond, itl: 10 * time.Millisecond}
		var file bytes.Buffer
		res, err := Run(t.Context(), Config{coarseTimers: true, Client: srv, Requests: requests(20, 100*time.Millisecond), Records: &file, RequestIDPrefix: "bench-"})
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		if s.Completed != 20 || s.Failed != 0 {
			t.Fatalf("completed/failed %d/%d", s.Completed, s.Failed)
		}
		// 19 gaps of 100 ms then the last request's 90 ms.
		if s.Duration != 1990*time.Millisecond {
			t.Fatalf("duration %v, want 1.99s", s.Duration)
		}
		if s.TTFT.Mean != 50 || s.TPOT.Mean != 10 || s.ITL.Mean != 10 || s.E2EL.Mean != 90 {
			t.Fatalf("ttft %v tpot %v itl %v e2el %v", s.TTFT.Mean, s.TPOT.Mean, s.ITL.Mean, s.E2EL.Mean)
		}
		if s.SendLag.Max != 0 {
			t.Fatalf("send lag %v on a fake clock, want 0", s.SendLag.Max)
		}
		if s.MaxConcurrentRequests != 1 {
			t.Fatalf("peak concurrency %d, want 1 (90 ms requests every 100 ms)", s.MaxConcurrentRequests)
		}
		lines := 0
		sc := bufio.NewScanner(&file)
		seen := map[int]bool{}
		for sc.Scan() {
			var r metrics.Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("records line %d: %v", lines+1, err)
			}
			if r.RequestID != "bench-"+itoa(r.Index) {
				t.Fatalf("request id %q for index %d", r.RequestID, r.Index)
			}
			seen[r.Index] = true
			lines++
		}
		if lines != 20 || len(seen) != 20 {
			t.Fatalf("records file has %d lines for %d distinct requests, want 20", lines, len(seen))
		}
	})
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestConcurrencyCapQueuesWithoutBlockingArrivals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeServer{ttft: 100 * time.Millisecond, itl: 100 * time.Millisecond}
		// 10 requests at once (rate inf), 2 at a time, 500 ms each.
		res, err := Run(t.Context(), Config{coarseTimers: true, Client: srv, Requests: requests(10, 0), MaxConcurrency: 2})
		if err != nil {
			t.Fatal(err)
		}
		if p := srv.peak.Load(); p != 2 {
			t.Fatalf("server saw %d in flight, cap is 2", p)
		}
		s := res.Summary
		if s.Duration != 2500*time.Millisecond {
			t.Fatalf("duration %v, want 2.5s", s.Duration)
		}
		// Queue times are 0,0,0.5,0.5,...,2.0 s: mean 1.0 s.
		if s.ClientQueue.Mean != 1000 || s.ClientQueue.Max != 2000 {
			t.Fatalf("client queue mean %v max %v ms", s.ClientQueue.Mean, s.ClientQueue.Max)
		}
		if s.SendLag.Max != 0 {
			t.Fatalf("send lag %v: arrivals must not wait for the cap", s.SendLag.Max)
		}
		if s.E2ELWithQueue.Mean != 1500 {
			t.Fatalf("queue-inclusive E2EL mean %v, want 1500", s.E2ELWithQueue.Mean)
		}
	})
}

func TestInterruptKeepsMeasuredAndMarksPartial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeServer{ttft: 200 * time.Millisecond, itl: 100 * time.Millisecond}
		ctx, cancel := context.WithCancel(t.Context())
		var file bytes.Buffer
		var mu sync.Mutex
		go func() {
			time.Sleep(1050 * time.Millisecond)
			cancel()
		}()
		res, err := Run(ctx, Config{coarseTimers: true, Client: srv, Requests: requests(100, 100*time.Millisecond), Records: &lockedWriter{w: &file, mu: &mu}, GracePeriod: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Interrupted {
			t.Fatal("result not marked interrupted")
		}
		// Requests 0..10 were sent by 1.05 s; in-flight ones finish within the grace period.
		if res.Summary.Completed != 11 || res.NotSent != 89 || res.Summary.Failed != 0 {
			t.Fatalf("completed %d failed %d not sent %d", res.Summary.Completed, res.Summary.Failed, res.NotSent)
		}
		if n := bytes.Count(file.Bytes(), []byte("\n")); n != 11 {
			t.Fatalf("records file has %d lines, want 11", n)
		}
	})
}

func TestGracePeriodCutsOffStragglers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeServer{ttft: 10 * time.Second, itl: time.Second}
		ctx, cancel := context.WithCancel(t.Context())
		go func() { time.Sleep(time.Second); cancel() }()
		start := time.Now()
		res, err := Run(ctx, Config{coarseTimers: true, Client: srv, Requests: requests(3, 0), GracePeriod: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 3*time.Second {
			t.Fatalf("run took %v, want 3s (1 s + 2 s grace)", took)
		}
		if res.Summary.Failed != 3 || res.Summary.Errors["canceled"] != 3 {
			t.Fatalf("failed %d errors %v", res.Summary.Failed, res.Summary.Errors)
		}
	})
}

func TestWarmupsAreNotMeasuredAndReadyCheckRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var attempts atomic.Int64
		srv := &fakeServer{ttft: time.Millisecond, itl: time.Millisecond, fail: func(i int) string {
			if i == 0 && attempts.Add(1) <= 3 {
				return "connection refused"
			}
			return ""
		}}
		res, err := Run(t.Context(), Config{coarseTimers: true, Client: srv, Requests: requests(4, 0), Warmups: 2, ReadyCheckTimeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		// 3 failed ready checks + 1 good, 2 warmups, 4 measured.
		if c := srv.calls.Load(); c != 10 {
			t.Fatalf("server got %d calls, want 10", c)
		}
		if res.Summary.Completed != 4 || len(res.Records) != 4 {
			t.Fatalf("completed %d records %d, want 4/4", res.Summary.Completed, len(res.Records))
		}
	})
}

func TestReadyCheckGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeServer{fail: func(int) string { return "connection refused" }}
		_, err := Run(t.Context(), Config{coarseTimers: true, Client: srv, Requests: requests(1, 0), ReadyCheckTimeout: 5 * time.Second})
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte("connection refused")) {
			t.Fatalf("err = %v, want a not-ready error naming the last failure", err)
		}
	})
}

func TestFailuresAreRecordsNotErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeServer{ttft: time.Millisecond, itl: time.Millisecond, fail: func(i int) string {
			if i%2 == 1 {
				return "HTTP 503: overloaded"
			}
			return ""
		}}
		res, err := Run(t.Context(), Config{coarseTimers: true, Client: srv, Requests: requests(10, 0), Summary: metrics.Options{Goodput: map[string]float64{"ttft": 1}}})
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		if s.Completed != 5 || s.Failed != 5 || s.Errors["HTTP 503: overloaded"] != 5 {
			t.Fatalf("completed %d failed %d errors %v", s.Completed, s.Failed, s.Errors)
		}
		if s.RequestGoodput == nil || math.Abs(*s.RequestGoodput-float64(5)/s.Duration.Seconds()) > 1e-9 {
			t.Fatalf("goodput %v", s.RequestGoodput)
		}
	})
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestBadConfig(t *testing.T) {
	if _, err := Run(t.Context(), Config{coarseTimers: true}); err == nil {
		t.Fatal("no client accepted")
	}
	if _, err := Run(t.Context(), Config{coarseTimers: true, Client: &fakeServer{}}); err == nil {
		t.Fatal("no requests accepted")
	}
}

// orderDoer records the order requests reach the server and takes hold
// per request, on synctest's clock.
// An atomic counter, not a mutex, takes each request's place: a contended
// mutex lets a newcomer overtake a waiter, which would reorder arrivals
// that the bench sent in order.
type orderDoer struct {
	hold  time.Duration
	next  atomic.Int64
	order []int
}

func (d *orderDoer) Do(ctx context.Context, req *workload.Request, _ string, base time.Time, rec *metrics.Record) {
	d.order[d.next.Add(1)-1] = req.Index
	rec.Start = time.Since(base)
	select {
	case <-ctx.Done():
	case <-time.After(d.hold):
	}
	rec.TTFT, rec.Latency = time.Since(base)-rec.Start, time.Since(base)-rec.Start
	rec.OutputLen, rec.PromptLen, rec.Success = 1, req.PromptLen, true
}

// TestRequestsGoOutInScheduleOrder is vLLM's client's order: requests due
// at the same instant, or waiting for the concurrency cap, start first come,
// first served, never the last one first. It runs on one P: with more, a
// goroutine the OS thread under it leaves waiting for a few microseconds
// can be overtaken on its way into Do by the ones started after it, which
// no client can prevent; on one P the start order is what the server sees.
func TestRequestsGoOutInScheduleOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, tc := range []struct {
		name           string
		maxConcurrency int
		gap            time.Duration
	}{
		{"all at once, one at a time", 1, 0},
		{"all at once, four at a time", 4, 0},
		{"all at once, no cap", 0, 0},
		{"faster than served, two at a time", 2, 10 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 100
				d := &orderDoer{hold: 50 * time.Millisecond, order: make([]int, n)}
				res, err := Run(t.Context(), Config{coarseTimers: true, Client: d, Requests: requests(n, tc.gap), MaxConcurrency: tc.maxConcurrency})
				if err != nil {
					t.Fatal(err)
				}
				if res.Summary.Completed != n || d.next.Load() != n {
					t.Fatalf("%d of %d requests completed, server saw %d", res.Summary.Completed, n, d.next.Load())
				}
				for place, idx := range d.order {
					if idx != place {
						t.Fatalf("request %d reached the server in place %d; first arrivals %v", idx, place, d.order[:min(12, n)])
					}
				}
			})
		})
	}
}
