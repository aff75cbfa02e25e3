package client

import (
	"net/http/httptrace"
	"sync/atomic"
)

// connTrace counts the connections one request was written to: more than
// one means the transport resent it after a reused connection failed
// before any response byte arrived.
type connTrace struct {
	conns  atomic.Int32
	reused atomic.Bool // the latest connection had carried a request before
	trace  httptrace.ClientTrace
}

func newConnTrace() *connTrace {
	t := &connTrace{}
	t.trace.GotConn = func(info httptrace.GotConnInfo) {
		t.conns.Add(1)
		t.reused.Store(info.Reused)
	}
	return t
}

func (t *connTrace) retries() int { return max(int(t.conns.Load())-1, 0) }
