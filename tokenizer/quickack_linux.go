package tokenizer

import (
	"net"
	"syscall"
)

// quickAck makes conn acknowledge what it receives at once instead of up to
// 40 ms later. A server that leaves Nagle on and writes its headers and
// body separately (llama.cpp's HTTP library does) holds the body until the
// headers are acknowledged; Linux delays that ACK on a kept-alive
// connection, so every /tokenize answer there took 40 ms instead of 0.5.
// The kernel drops quick-ACK mode again as the exchange goes on, so it is
// set before every read. Keep-alive stays: one connection per call would
// leave thousands in TIME_WAIT on a long setup.
func quickAck(conn net.Conn) net.Conn {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return conn
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return conn
	}
	return &quickAckConn{TCPConn: tc, raw: raw}
}

type quickAckConn struct {
	*net.TCPConn
	raw syscall.RawConn
}

func (c *quickAckConn) Read(p []byte) (int, error) {
	// A failed setsockopt costs only speed, never correctness.
	_ = c.raw.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 1)
	})
	return c.TCPConn.Read(p)
}

// keepAlive reports whether tokenizer connections are kept alive here:
// quickAck prevents the stall on Linux.
const keepAlive = true
