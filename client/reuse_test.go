package client

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/workload"
)

// writeRawStream writes a complete chunked SSE response by hand, without
// "Connection: close", as llama.cpp's server does before it drops the
// connection.
func writeRawStream(w *bufio.Writer, events ...string) error {
	_, _ = io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	for _, ev := range events {
		fmt.Fprintf(w, "%x\r\n%s\r\n", len(ev), ev)
	}
	_, _ = io.WriteString(w, "0\r\n\r\n")
	return w.Flush()
}

// takeOver counts the request, reads its body and takes the connection
// from the server, so the test writes the response bytes itself.
func takeOver(t *testing.T, w http.ResponseWriter, r *http.Request, served *atomic.Int64) (net.Conn, *bufio.ReadWriter) {
	_, _ = io.Copy(io.Discard, r.Body)
	served.Add(1)
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return nil, nil
	}
	return conn, rw
}

// closingServer answers every request with a full stream and then closes
// the connection without having announced it. With waitForNext it first
// waits until the client has written its next request on the connection,
// so every reuse is guaranteed to hit a dead connection; otherwise it
// closes at once, and reuse races with the close as with the real server.
func closingServer(t *testing.T, waitForNext bool, served *atomic.Int64) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, rw := takeOver(t, w, r, served)
		if conn == nil {
			return
		}
		defer conn.Close()
		if err := writeRawStream(rw.Writer, chunk("a"), chunk("b"), finishChunk, doneEvent); err != nil {
			return
		}
		if waitForNext {
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // bounds the test, asserts nothing
			_, _ = rw.Reader.Peek(1)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestResendOnReusedConnectionClosedBeforeResponse(t *testing.T) {
	for _, tc := range []struct {
		name        string
		waitForNext bool
		wantRetries bool
	}{
		{"close after the next request arrives", true, true},
		{"close right after the response", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var served atomic.Int64
			srv := closingServer(t, tc.waitForNext, &served)
			c := newTestClient(t, Config{BaseURL: srv.URL})
			const workers, perWorker = 8, 8
			recs := make([]metrics.Record, workers*perWorker)
			var wg sync.WaitGroup
			base := time.Now()
			for w := range workers {
				wg.Go(func() {
					for i := range perWorker {
						c.Do(context.Background(), &workload.Request{Prompt: "x", MaxTokens: 2}, "", base, &recs[w*perWorker+i])
					}
				})
			}
			wg.Wait()
			retries, reused := 0, 0
			for i := range recs {
				if !recs[i].Success {
					t.Errorf("request %d failed: %s", i, recs[i].Error)
				}
				retries += recs[i].Retries
				if recs[i].ConnReused {
					reused++
				}
			}
			if tc.wantRetries && retries == 0 {
				t.Errorf("no request records a retry, yet every reused connection was dead")
			}
			if got := int(served.Load()); got != len(recs) {
				t.Errorf("server answered %d requests, want %d: a resend must only follow a request the server never answered", got, len(recs))
			}
			t.Logf("%d requests, %d retries, %d answered on reused connections", len(recs), retries, reused)
		})
	}
}

// A request whose response had started must never be resent: the server
// may already have done the work, and the partial result is the finding.
func TestNoResendAfterResponseBytes(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, rw := takeOver(t, w, r, &served)
		if conn == nil {
			return
		}
		defer conn.Close()
		// A complete response keeps the connection open for reuse; the next
		// request on it gets one chunk, then the connection is dropped.
		if writeRawStream(rw.Writer, chunk("a"), finishChunk, doneEvent) != nil {
			return
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // bounds the test, asserts nothing
		next, err := http.ReadRequest(rw.Reader)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, next.Body)
		served.Add(1)
		_, _ = io.WriteString(rw, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		ev := chunk("a")
		fmt.Fprintf(rw, "%x\r\n%s\r\n", len(ev), ev)
		_ = rw.Flush()
	}))
	defer srv.Close()
	c := newTestClient(t, Config{BaseURL: srv.URL, Timeout: 20 * time.Second})
	req := &workload.Request{Prompt: "x", MaxTokens: 4}
	var first, second metrics.Record
	c.Do(context.Background(), req, "", time.Now(), &first)
	if !first.Success || first.ConnReused {
		t.Fatalf("first request: success %v reused %v error %q", first.Success, first.ConnReused, first.Error)
	}
	c.Do(context.Background(), req, "", time.Now(), &second)
	if second.Success || second.Retries != 0 || !second.ConnReused {
		t.Errorf("cut stream: success %v retries %d reused %v error %q; want a failure, no retry, on the reused connection", second.Success, second.Retries, second.ConnReused, second.Error)
	}
	if got := served.Load(); got != 2 {
		t.Errorf("server saw %d requests, want 2 (no resend)", got)
	}
}

func TestConnectionReuseOff(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(sseHandler(chunk("a"), finishChunk, doneEvent))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	for _, tc := range []struct {
		disable   bool
		wantConns int64
	}{{false, 1}, {true, 5}} {
		conns.Store(0)
		c := newTestClient(t, Config{BaseURL: srv.URL, DisableConnectionReuse: tc.disable})
		reused := 0
		for range 5 {
			var rec metrics.Record
			c.Do(context.Background(), &workload.Request{Prompt: "x", MaxTokens: 1}, "", time.Now(), &rec)
			if !rec.Success {
				t.Fatalf("disable=%v: %s", tc.disable, rec.Error)
			}
			if rec.ConnReused {
				reused++
			}
		}
		c.CloseIdleConnections()
		if got := conns.Load(); got != tc.wantConns {
			t.Errorf("DisableConnectionReuse=%v: %d connections for 5 sequential requests, want %d", tc.disable, got, tc.wantConns)
		}
		if want := int(5 - tc.wantConns); reused != want {
			t.Errorf("DisableConnectionReuse=%v: %d records say reused, want %d", tc.disable, reused, want)
		}
	}
}

func TestVocabSizeFromModels(t *testing.T) {
	tests := []struct {
		name, body, model string
		want              int
	}{
		{"llama.cpp single model, other name", `{"object":"list","data":[{"id":"/models/tiny.gguf","object":"model","owned_by":"llamacpp","meta":{"vocab_type":2,"n_vocab":4259,"n_ctx_train":2048}}]}`, "tiny", 4259},
		{"vLLM says nothing", `{"object":"list","data":[{"id":"Qwen/Qwen2-7B","object":"model","max_model_len":32768}]}`, "Qwen/Qwen2-7B", 0},
		{"several models: the matching one", `{"data":[{"id":"a","meta":{"n_vocab":100}},{"id":"b","meta":{"n_vocab":200}}]}`, "b", 200},
		{"several models, none matches", `{"data":[{"id":"a","meta":{"n_vocab":100}},{"id":"b","meta":{"n_vocab":200}}]}`, "c", 0},
		{"negative is unknown", `{"data":[{"id":"a","meta":{"n_vocab":-5}}]}`, "a", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/models" {
					http.NotFound(w, r)
					return
				}
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c := newTestClient(t, Config{BaseURL: srv.URL})
			got, err := c.VocabSize(context.Background(), tc.model)
			if err != nil || got != tc.want {
				t.Errorf("VocabSize = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
