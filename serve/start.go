package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Running is a started server: the step loop and an HTTP listener.
type Running struct {
	*Server
	addr      net.Addr
	url       string
	hs        *http.Server
	stopLoop  context.CancelFunc
	runDone   chan struct{}
	serveDone chan error
	stopCtx   func() bool
	// mem serves DialInMemory's connections, from its first call on.
	mem        *memListener
	memMu      sync.Mutex // orders memServing and memClosed with memWG
	memServing bool
	memClosed  bool
	memWG      sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// Start creates a server from cfg, starts its step loop and serves HTTP on
// addr ("" → "127.0.0.1:0", a free loopback port). The server stops when
// Close is called or ctx ends.
func Start(ctx context.Context, cfg Config, addr string) (*Running, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve: listening on %s: %w (pick a free port with --port, or 0 for any)", addr, err)
	}
	if n := s.cfg.MaxConnections; n > 0 {
		ln = newLimitListener(ln, n)
	}
	loopCtx, stopLoop := context.WithCancel(context.WithoutCancel(ctx))
	r := &Running{
		Server:    s,
		addr:      ln.Addr(),
		url:       "http://" + ln.Addr().String(),
		stopLoop:  stopLoop,
		mem:       newMemListener(ln.Addr()),
		runDone:   make(chan struct{}),
		serveDone: make(chan error, 1),
		hs: &http.Server{
			Handler:           s.Handler(),
			ReadHeaderTimeout: 30 * time.Second,
			IdleTimeout:       2 * time.Minute,
		},
	}
	go func() {
		defer close(r.runDone)
		_ = s.Run(loopCtx)
	}()
	<-s.logged
	go func() { r.serveDone <- r.hs.Serve(ln) }()
	r.stopCtx = context.AfterFunc(ctx, func() { _ = r.Close() })
	return r, nil
}

// URL is the server's base URL, e.g. "http://127.0.0.1:40123".
func (r *Running) URL() string { return r.url }

// Addr is the address the server listens on.
func (r *Running) Addr() net.Addr { return r.addr }

// IsLoopback reports whether a listener on addr accepts connections from
// this host only. The unspecified address (0.0.0.0, ::) listens on every
// interface, so it is not loopback.
func IsLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// Close stops accepting connections, lets in-flight requests finish for up
// to Config.ShutdownGrace, then ends the rest (streams get an error event),
// closes every connection and waits for every goroutine the server started.
func (r *Running) Close() error {
	r.closeOnce.Do(func() {
		r.stopCtx()
		shutdownCtx, cancelShutdown := context.WithCancel(context.Background())
		shutdownDone := make(chan struct{})
		go func() {
			defer close(shutdownDone)
			// Closes the listener and idle connections; returns when the
			// rest are idle or shutdownCtx is cancelled below.
			_ = r.hs.Shutdown(shutdownCtx)
		}()
		waitHandlers := func(d time.Duration) {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-r.handlers.idle():
			case <-t.C:
			}
		}
		waitHandlers(r.cfg.ShutdownGrace)
		r.stopLoop()
		<-r.runDone
		// Streams now end with an error event; give their handlers a
		// moment to write it before cutting the connections.
		waitHandlers(time.Second)
		cancelShutdown()
		_ = r.hs.Close() // connections a client keeps open or never used
		r.memMu.Lock()
		r.memClosed = true
		r.memMu.Unlock()
		_ = r.mem.Close()
		r.memWG.Wait()
		<-shutdownDone
		if err := <-r.serveDone; err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.closeErr = fmt.Errorf("serve: %w", err)
		}
		<-r.handlers.idle()
	})
	return r.closeErr
}
