package serve

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// pipeListener hands out in-memory connections, so an http.Server can run
// inside a synctest bubble, where deadlines follow the fake clock.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// dial connects a client, or returns nil once the listener is closed.
func (l *pipeListener) dial() net.Conn {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client
	case <-l.done:
		return nil
	}
}

// startLoop creates a Server inside a synctest bubble, lets prepare adjust
// it, and runs its step loop on runtime timers (the fake clock); stop ends
// the loop and waits for it.
func startLoop(t *testing.T, cfg Config, prepare func(*Server)) (s *Server, stop func()) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.coarseClock = true
	if prepare != nil {
		prepare(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	return s, func() { cancel(); <-done }
}

// serveInBubble runs s's step loop and an http.Server for it on a pipe
// listener, and stops both when the test function returns.
func serveInBubble(t *testing.T, cfg Config, test func(l *pipeListener)) {
	httpInBubble(t, cfg, func(_ *Server, l *pipeListener) { test(l) })
}

// httpInBubble is serveInBubble that also hands the test its Server.
func httpInBubble(t *testing.T, cfg Config, test func(s *Server, l *pipeListener)) {
	synctest.Test(t, func(t *testing.T) {
		s, stopLoop := startLoop(t, cfg, nil)
		l := newPipeListener()
		hs := &http.Server{Handler: s.Handler()}
		serveDone := make(chan struct{})
		go func() { defer close(serveDone); _ = hs.Serve(l) }()
		test(s, l)
		_ = hs.Close()
		<-serveDone
		stopLoop()
	})
}

// TestSlowBodyTimesOut is issue 9's slowloris: a client that sends its
// headers and then trickles its body gets a 408 when the body deadline
// passes, and its connection is closed, while a streamed response that
// lasts far longer than that deadline is not cut.
func TestSlowBodyTimesOut(t *testing.T) {
	cfg := testConfig(t)
	cfg.BodyReadTimeout = 50 * time.Millisecond
	serveInBubble(t, cfg, func(l *pipeListener) {
		conn := l.dial()
		defer conn.Close()
		start := time.Now()
		_, _ = io.WriteString(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"pro")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no response to a stalled body: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		if waited := time.Since(start); resp.StatusCode != http.StatusRequestTimeout || waited != cfg.BodyReadTimeout {
			t.Errorf("stalled body: %d %s after %v; want 408 after %v", resp.StatusCode, body, waited, cfg.BodyReadTimeout)
		}
		if _, err := conn.Read(make([]byte, 1)); err == nil {
			t.Error("the connection stayed open after the body timed out")
		}

		stream := l.dial()
		defer stream.Close()
		req := `{"prompt":"hello","max_tokens":200,"ignore_eos":true,"stream":true}`
		start = time.Now()
		_, _ = io.WriteString(stream, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(req))+"\r\n\r\n"+req)
		resp, err = http.ReadResponse(bufio.NewReader(stream), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		if took := time.Since(start); resp.StatusCode != 200 || !strings.HasSuffix(string(body), "data: [DONE]\n\n") || took < 4*cfg.BodyReadTimeout {
			t.Errorf("stream: %d, %d bytes, took %v; want a complete stream lasting well past the body deadline", resp.StatusCode, len(body), took)
		}
	})
}

// TestLimitListener: with two slots the third connection waits until one
// of the first two closes; closing a connection twice frees one slot only;
// Close ends a waiting Accept.
func TestLimitListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newPipeListener()
		l := newLimitListener(base, 2)
		var mu sync.Mutex
		var accepted []net.Conn
		acceptDone := make(chan error)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					acceptDone <- err
					return
				}
				mu.Lock()
				accepted = append(accepted, c)
				mu.Unlock()
			}
		}()
		count := func() int {
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			return len(accepted)
		}
		var clients sync.WaitGroup
		dial := func() {
			clients.Go(func() {
				if c := base.dial(); c != nil {
					defer c.Close()
				}
			})
		}
		dial()
		dial()
		dial()
		if n := count(); n != 2 {
			t.Fatalf("accepted %d connections with 2 slots, want 2", n)
		}
		_ = accepted[0].Close()
		if n := count(); n != 3 {
			t.Fatalf("after one closed: accepted %d, want 3", n)
		}
		_ = accepted[0].Close()
		dial()
		if n := count(); n != 3 {
			t.Fatalf("closing a connection twice freed a second slot: accepted %d, want 3", n)
		}
		_ = l.Close()
		if err := <-acceptDone; !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v", err)
		}
		for _, c := range accepted {
			_ = c.Close()
		}
		clients.Wait()
	})
}

// TestSlowClientOnLoopback runs both limits through Start on a real
// socket: with one connection allowed, a client stalling its body holds
// the only slot until the body deadline closes it, and the next client is
// then served. Bounded by a 10 s guard; it normally takes 100 ms.
func TestSlowClientOnLoopback(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxConnections = 1
	cfg.BodyReadTimeout = 100 * time.Millisecond
	r := startServer(t, cfg)
	addr := strings.TrimPrefix(r.URL(), "http://")
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	_ = slow.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(slow, "POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	next, err := client.Get(r.URL() + "/health")
	if err != nil {
		t.Fatalf("the next client was never served: %v", err)
	}
	_ = next.Body.Close()
	resp, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil {
		t.Fatalf("the stalled client got no answer: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || next.StatusCode != http.StatusOK {
		t.Errorf("stalled client %d (want 408), next client %d (want 200)", resp.StatusCode, next.StatusCode)
	}
}
