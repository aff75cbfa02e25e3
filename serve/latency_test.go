package serve

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// The server's request latencies as the default host resolves them, with
// odd nanoseconds so that a mistake of one shows.
const (
	testIngest   = 9300*time.Microsecond + 17
	testDelivery = 1850*time.Microsecond + 3
)

// sendStream writes a streaming completion request for n tokens on a new
// connection and returns the connection and the response's body reader.
func sendStream(t *testing.T, l *pipeListener, n int) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn := l.dial()
	body := `{"prompt":"hello there","max_tokens":` + strconv.Itoa(n) + `,"ignore_eos":true,"stream":true}`
	go func() {
		_, _ = io.WriteString(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	return conn, bufio.NewReader(resp.Body)
}

// chunkTimes reads a stream to its end and returns when each token chunk
// arrived, relative to sent.
func chunkTimes(t *testing.T, r *bufio.Reader, sent time.Time) []time.Duration {
	t.Helper()
	var times []time.Duration
	for {
		line, err := r.ReadString('\n')
		if strings.HasPrefix(line, "data: {") {
			times = append(times, time.Since(sent))
		}
		if line == doneEvent[:len(doneEvent)-1] || err != nil {
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			return times
		}
	}
}

// TestRequestLatenciesOverHTTP: through the HTTP handler, Ingest and
// Delivery add exactly their sum to a lone request's time to first chunk
// and nothing to the gaps between chunks, as sim charges them.
func TestRequestLatenciesOverHTTP(t *testing.T) {
	const tokens = 6
	var runs [2][]time.Duration
	for i, lat := range []struct{ ingest, delivery time.Duration }{{0, 0}, {testIngest, testDelivery}} {
		cfg := testConfig(t)
		cfg.Ingest, cfg.Delivery = lat.ingest, lat.delivery
		httpInBubble(t, cfg, func(s *Server, l *pipeListener) {
			sent := time.Now()
			conn, r := sendStream(t, l, tokens)
			defer conn.Close()
			runs[i] = chunkTimes(t, r, sent)
		})
	}
	plain, paced := runs[0], runs[1]
	if len(plain) != tokens || len(paced) != tokens {
		t.Fatalf("chunks: %d without latencies, %d with; want %d each", len(plain), len(paced), tokens)
	}
	for k := range plain {
		if got, want := paced[k]-plain[k], testIngest+testDelivery; got != want {
			t.Errorf("chunk %d came %v later with the latencies, want %v (Ingest+Delivery)", k, got, want)
		}
	}
}

// TestRequestLatencyClients: a client that leaves during its Ingest never
// reaches the engine, and one that stops reading holds back only its own
// stream: another request's chunks still come on the model's time.
func TestRequestLatencyClients(t *testing.T) {
	cfg := testConfig(t)
	cfg.Ingest, cfg.Delivery = testIngest, testDelivery
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s *Server, l *pipeListener)
	}{
		{"disconnect during ingest", func(t *testing.T, s *Server, l *pipeListener) {
			conn, _ := sendStream(t, l, 50)
			time.Sleep(testIngest / 2)
			_ = conn.Close()
			time.Sleep(testIngest)
			synctest.Wait()
			snap, err := s.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if snap.Engine.Steps != 0 || snap.Requests != 0 || !snap.Idle {
				t.Errorf("a request abandoned during its Ingest reached the engine: %d steps, %d requests, idle %v", snap.Engine.Steps, snap.Requests, snap.Idle)
			}
			sent := time.Now()
			conn, r := sendStream(t, l, 4)
			defer conn.Close()
			if times := chunkTimes(t, r, sent); len(times) != 4 || times[0] <= testIngest+testDelivery {
				t.Errorf("the next request: chunks at %v; want 4, the first after Ingest+Delivery", times)
			}
		}},
		{"slow reader", func(t *testing.T, s *Server, l *pipeListener) {
			// The reference: the second request's chunk times alone.
			sent := time.Now()
			conn, r := sendStream(t, l, 8)
			alone := chunkTimes(t, r, sent)
			_ = conn.Close()
			time.Sleep(time.Second)

			// A client that reads nothing for a second: on a pipe its
			// handler's first write blocks until the client reads.
			stalled, stalledBody := sendStream(t, l, 200)
			defer stalled.Close()
			sent = time.Now()
			conn, r = sendStream(t, l, 8)
			defer conn.Close()
			beside := chunkTimes(t, r, sent)
			if len(beside) != len(alone) || len(alone) != 8 {
				t.Fatalf("chunks: %d beside a stalled reader, %d alone; want 8", len(beside), len(alone))
			}
			// Beside a 200-token decode every step is longer, so only
			// the gaps' shape is compared: each chunk comes after the
			// previous one, never in a burst held up by the stalled client.
			for k := 1; k < len(beside); k++ {
				if gap := beside[k] - beside[k-1]; gap <= 0 || gap > 2*(alone[k]-alone[k-1])+time.Millisecond {
					t.Errorf("chunk %d beside a stalled reader came %v after the previous (alone: %v)", k, gap, alone[k]-alone[k-1])
				}
			}
			time.Sleep(time.Second)
			// Its backlog comes coalesced, to the end.
			rest, err := io.ReadAll(stalledBody)
			if err != nil || !strings.Contains(string(rest), `"finish_reason":"length"`) || !strings.HasSuffix(string(rest), doneEvent) {
				t.Errorf("the stalled reader, reading at last: %v, %d bytes without its end", err, len(rest))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			httpInBubble(t, cfg, func(s *Server, l *pipeListener) { tc.run(t, s, l) })
		})
	}
}

// A P/D pair pays the chat path once: the prefill server (a KV producer)
// prepares the chat request and charges its ChatIngest, and the decode
// server (a KV consumer), reached through the proxy, charges neither.
func TestChatCostsByKVRole(t *testing.T) {
	const prepare, ingest = 4 * time.Millisecond, 2 * time.Millisecond
	for _, c := range []struct {
		role                    KVRole
		wantPrepare, wantIngest time.Duration
	}{
		{"", prepare, ingest},
		{KVProducer, prepare, ingest},
		{KVConsumer, 0, 0},
	} {
		cfg := Config{ChatPrepare: prepare, ChatIngest: ingest}
		if c.role != "" {
			cfg.KVTransfer = &KVTransferConfig{Role: c.role}
		}
		got := cfg.withDefaults()
		if got.ChatPrepare != c.wantPrepare || got.ChatIngest != c.wantIngest {
			t.Errorf("role %q: chat preparation %v, chat ingest %v; want %v, %v", c.role, got.ChatPrepare, got.ChatIngest, c.wantPrepare, c.wantIngest)
		}
	}
}
