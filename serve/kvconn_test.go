package serve

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fakeKVConsumer acknowledges KV frames and counts the connections it
// accepted; with closeAfterFrame it hangs up after each acknowledgement,
// as a consumer that restarted leaves a producer's idle connection dead.
type fakeKVConsumer struct {
	ln              net.Listener
	closeAfterFrame bool
	accepted        atomic.Int32
	frames          chan string // request ids, as frames arrive
	wg              sync.WaitGroup
}

func startFakeKVConsumer(t *testing.T, closeAfterFrame bool) *fakeKVConsumer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &fakeKVConsumer{ln: ln, closeAfterFrame: closeAfterFrame, frames: make(chan string, 16)}
	c.wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.accepted.Add(1)
			c.wg.Go(func() { c.serve(conn) })
		}
	})
	t.Cleanup(func() { _ = ln.Close(); c.wg.Wait() })
	return c
}

func (c *fakeKVConsumer) serve(conn net.Conn) {
	defer conn.Close()
	for {
		h, err := readKVFrameHeader(conn)
		if err != nil {
			return
		}
		n, err := io.CopyN(io.Discard, conn, h.PayloadBytes)
		if err != nil {
			return
		}
		select {
		case c.frames <- h.RequestID:
		default:
		}
		if _, err := conn.Write(appendKVAck(nil, n)); err != nil || c.closeAfterFrame {
			return
		}
	}
}

// A producer sends its transfers to one consumer over one kept connection,
// and a kept connection the consumer hung up on costs a fresh one, not a
// failed transfer.
func TestKVProducerKeepsConnections(t *testing.T) {
	for _, tc := range []struct {
		name            string
		closeAfterFrame bool
		wantAccepted    int32
	}{
		{"consumer keeps the connection", false, 1},
		{"consumer hangs up after each transfer", true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			consumer := startFakeKVConsumer(t, tc.closeAfterFrame)
			k, err := newKVSide(KVTransferConfig{Role: KVProducer, BytesPerToken: 1 << 10}, prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			defer k.closeIdle()
			for i, id := range []string{"a", "b", "c"} {
				rec := k.send(context.Background(), consumer.ln.Addr().String(), id, 100+i, time.Now())
				if rec.Err != nil || rec.Bytes != int64(100+i)<<10 {
					t.Fatalf("transfer %s: %d bytes, %v", id, rec.Bytes, rec.Err)
				}
			}
			if got := consumer.accepted.Load(); got != tc.wantAccepted {
				t.Errorf("the consumer accepted %d connections for 3 transfers, want %d", got, tc.wantAccepted)
			}
		})
	}
}

// blockedWriter is a response writer whose body writes wait for release:
// a client that has not read the response yet.
type blockedWriter struct {
	header  http.Header
	release chan struct{}
}

func (w *blockedWriter) Header() http.Header { return w.header }
func (w *blockedWriter) WriteHeader(int)     {}
func (w *blockedWriter) Write(b []byte) (int, error) {
	<-w.release
	return len(b), nil
}

// A producer sends a request's KV when its prefill step is done, not once
// the response has been written.
func TestKVProducerSendsWhenPromptComputed(t *testing.T) {
	consumer := startFakeKVConsumer(t, false)
	cfg := testConfig(t)
	cfg.KVTransfer = &KVTransferConfig{Role: KVProducer, Peer: consumer.ln.Addr().String(), BytesPerToken: 1 << 10}
	r := startServer(t, cfg)
	body := `{"model":"test-model","prompt":[1000,1001,1002,1003],"max_tokens":1,"stream":false}`
	req := httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(body))
	req.Header.Set(KVRequestHeader, "req-1")
	w := &blockedWriter{header: http.Header{}, release: make(chan struct{})}
	handled := make(chan struct{})
	go func() {
		defer close(handled)
		r.Handler().ServeHTTP(w, req)
	}()
	select {
	case id := <-consumer.frames:
		if id != "req-1" {
			t.Errorf("the consumer got the KV of %q, want req-1", id)
		}
	case <-time.After(10 * time.Second):
		t.Error("no KV arrived while the prefill response was still being written")
	}
	close(w.release)
	<-handled
}
