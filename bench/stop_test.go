package bench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servebench/servebench/metrics"
)

// failingSink accepts failAfter records, then fails every Add as a full
// disk does.
type failingSink struct {
	added, failAfter int
	closed           bool
}

func (s *failingSink) Add(*metrics.Record) error {
	s.added++
	if s.added > s.failAfter {
		return syscall.ENOSPC
	}
	return nil
}

func (s *failingSink) Close() error { s.closed = true; return nil }

// A sink that stops accepting records (full disk) stops sending; requests
// already in flight finish and are summarised; the run is not "interrupted".
func TestSinkErrorStopsSendingAndKeepsSummary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeServer{ttft: 250 * time.Millisecond, itl: 100 * time.Millisecond}
		sink := &failingSink{failAfter: 3}
		// One request every 100 ms, each taking 650 ms: the 4th record
		// (request 3, done at 0.95 s) fails; requests 4..9 are in flight then.
		res, err := Run(t.Context(), Config{coarseTimers: true, Client: srv, Requests: requests(100, 100*time.Millisecond), Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(res.SinkErr, syscall.ENOSPC) {
			t.Fatalf("SinkErr = %v, want ENOSPC", res.SinkErr)
		}
		if res.Interrupted {
			t.Error("a records error is not an interrupt")
		}
		if res.Summary.Completed != 10 || res.NotSent != 90 || res.Summary.Failed != 0 {
			t.Fatalf("completed %d failed %d not sent %d, want 10/0/90", res.Summary.Completed, res.Summary.Failed, res.NotSent)
		}
		if sink.added != 10 || !sink.closed {
			t.Fatalf("sink got %d records, closed %v; want all 10 and closed", sink.added, sink.closed)
		}
	})
}

// A records file that fills up stops the run the same way and never ends in
// a partial line.
func TestRecordsWriteErrorLeavesWholeLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeServer{ttft: 200 * time.Millisecond, itl: 100 * time.Millisecond}
		disk := &fullDisk{capacity: 700}
		res, err := Run(t.Context(), Config{coarseTimers: true, Client: srv, Requests: requests(100, 100*time.Millisecond), Records: disk})
		if err != nil {
			t.Fatal(err)
		}
		if res.SinkErr == nil || res.NotSent == 0 {
			t.Fatalf("SinkErr %v, not sent %d: want the run stopped by the full disk", res.SinkErr, res.NotSent)
		}
		if b := disk.Bytes(); len(b) == 0 || b[len(b)-1] != '\n' {
			t.Fatalf("records end in a partial line: %q", b)
		}
	})
}

// fullDisk is a file of fixed capacity: a write past it stores what fits
// and fails with ENOSPC. It can be truncated like a file.
type fullDisk struct {
	bytes.Buffer
	capacity int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	room := d.capacity - d.Len()
	if len(p) <= room {
		return d.Buffer.Write(p)
	}
	n, _ := d.Buffer.Write(p[:max(room, 0)])
	return n, syscall.ENOSPC
}

func (d *fullDisk) Truncate(size int64) error { d.Buffer.Truncate(int(size)); return nil }

func (d *fullDisk) Seek(offset int64, whence int) (int64, error) {
	if whence == 1 && offset == 0 {
		return int64(d.Len()), nil
	}
	return offset, nil
}

// Abort (a second Ctrl-C) cuts in-flight requests off at once instead of
// waiting out the grace period, and their records still reach the sink.
func TestAbortSkipsTheGracePeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeServer{ttft: 10 * time.Second, itl: time.Second}
		ctx, cancel := context.WithCancel(t.Context())
		abort := make(chan struct{})
		go func() {
			time.Sleep(time.Second)
			cancel()
			time.Sleep(500 * time.Millisecond)
			close(abort)
		}()
		var file bytes.Buffer
		start := time.Now()
		res, err := Run(ctx, Config{coarseTimers: true, Client: srv, Requests: requests(3, 0), GracePeriod: 30 * time.Second, Abort: abort, Records: &file})
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 1500*time.Millisecond {
			t.Fatalf("run took %v, want 1.5s (aborted 0.5 s into a 30 s grace)", took)
		}
		if res.Summary.Errors["canceled"] != 3 || bytes.Count(file.Bytes(), []byte("\n")) != 3 {
			t.Fatalf("errors %v, records %q: want 3 canceled, all written", res.Summary.Errors, file.String())
		}
	})
}

func TestInitialTestStopsWithTheServersReason(t *testing.T) {
	tests := []struct {
		name   string
		fail   string
		wantOK bool
	}{
		{"server answers", "", true},
		{"unknown model", "HTTP 404: The model 'nope' does not exist.", false},
		{"nothing listening", "connection refused by 127.0.0.1:1: is the server running and listening there?", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := &fakeServer{ttft: time.Millisecond, itl: time.Millisecond, fail: func(int) string { return tt.fail }}
				err := InitialTest(t.Context(), Config{Client: srv, Requests: requests(5, 0)})
				if srv.calls.Load() != 1 {
					t.Errorf("%d requests sent, want exactly 1", srv.calls.Load())
				}
				if tt.wantOK {
					if err != nil {
						t.Fatal(err)
					}
					return
				}
				var ite *InitialTestError
				if !errors.As(err, &ite) || !strings.Contains(err.Error(), tt.fail) {
					t.Fatalf("err = %v, want an InitialTestError carrying %q", err, tt.fail)
				}
			})
		})
	}
}
