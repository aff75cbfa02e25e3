//go:build !linux

package tokenizer

import "net"

// quickAck has no portable equivalent of Linux's TCP_QUICKACK.
func quickAck(conn net.Conn) net.Conn { return conn }

// keepAlive is false where quickAck cannot stop a kept-alive connection
// from waiting on delayed ACKs (see quickack_linux.go): Linux starts a
// fresh connection in quick-ACK mode, and a fresh connection per call is
// the portable way to get that mode elsewhere too.
const keepAlive = false
