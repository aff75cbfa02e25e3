package serve

import (
	"context"
	"fmt"
	"net"
	"sync"
)

// memListener hands the server connections made in memory by
// Running.DialInMemory.
type memListener struct {
	addr   net.Addr
	conns  chan net.Conn
	once   sync.Once
	closed chan struct{}
}

func newMemListener(addr net.Addr) *memListener {
	return &memListener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *memListener) Addr() net.Addr { return l.addr }

// DialInMemory connects to the server without the network, for a client in
// the same process (bench's embedded target): a token chunk then costs two
// goroutine hand-offs instead of a write and a read system call and the
// kernel's loopback delivery, which were most of an emulated run's CPU on a
// small machine. The connection is synchronous (net.Pipe): a write waits for
// the reader, so it suits a client that reads every stream as it comes.
func (r *Running) DialInMemory(ctx context.Context) (net.Conn, error) {
	r.memMu.Lock()
	if r.memClosed {
		r.memMu.Unlock()
		return nil, fmt.Errorf("serve: dial in memory: %w", errServerClosed)
	}
	if !r.memServing {
		r.memServing = true
		r.memWG.Go(func() { _ = r.hs.Serve(r.mem) })
	}
	r.memMu.Unlock()
	client, server := net.Pipe()
	select {
	case r.mem.conns <- server:
		return client, nil
	case <-r.mem.closed:
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
	client.Close()
	server.Close()
	return nil, fmt.Errorf("serve: dial in memory: %w", errServerClosed)
}
