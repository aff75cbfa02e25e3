package serve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The KV wire protocol between a producer (prefill) and a consumer (decode)
// serve instance. One TCP connection carries one request's KV:
//
//	"SBKV" | version (1 byte, 1) | id length (1 byte, 1..255) | id |
//	prompt tokens (uint32 BE) | payload length (uint64 BE) | payload
//
// and the consumer answers with "SBOK" | bytes received (uint64 BE) once
// the payload is in, so the producer knows the KV landed.
const (
	kvMagic        = "SBKV"
	kvAckMagic     = "SBOK"
	kvWireVersion  = 1
	maxKVPayload   = 1 << 40 // far above any model's KV; bounds a corrupt length
	kvAckFrameSize = 12
)

// kvFrameHeader precedes a request's KV payload.
type kvFrameHeader struct {
	RequestID    string
	PromptTokens int
	PayloadBytes int64
}

var errKVFrame = errors.New("malformed KV frame")

func (h kvFrameHeader) append(b []byte) ([]byte, error) {
	if n := len(h.RequestID); n == 0 || n > 255 {
		return nil, fmt.Errorf("KV request id %q: give 1 to 255 bytes", h.RequestID)
	}
	if h.PromptTokens < 0 || int64(h.PromptTokens) > 1<<32-1 || h.PayloadBytes < 0 || h.PayloadBytes > maxKVPayload {
		return nil, fmt.Errorf("KV frame for %s: %d tokens, %d bytes out of range", h.RequestID, h.PromptTokens, h.PayloadBytes)
	}
	b = append(b, kvMagic...)
	b = append(b, kvWireVersion, byte(len(h.RequestID)))
	b = append(b, h.RequestID...)
	b = binary.BigEndian.AppendUint32(b, uint32(h.PromptTokens))
	return binary.BigEndian.AppendUint64(b, uint64(h.PayloadBytes)), nil
}

// readKVFrameHeader reads a header; the payload follows on r.
func readKVFrameHeader(r io.Reader) (kvFrameHeader, error) {
	var fixed [6]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return kvFrameHeader{}, fmt.Errorf("%w: reading the header: %w", errKVFrame, err)
	}
	if string(fixed[:4]) != kvMagic {
		return kvFrameHeader{}, fmt.Errorf("%w: magic %q, want %q (is the peer a servebench KV producer?)", errKVFrame, fixed[:4], kvMagic)
	}
	if fixed[4] != kvWireVersion {
		return kvFrameHeader{}, fmt.Errorf("%w: version %d, want %d", errKVFrame, fixed[4], kvWireVersion)
	}
	idLen := int(fixed[5])
	if idLen == 0 {
		return kvFrameHeader{}, fmt.Errorf("%w: empty request id", errKVFrame)
	}
	rest := make([]byte, idLen+12)
	if _, err := io.ReadFull(r, rest); err != nil {
		return kvFrameHeader{}, fmt.Errorf("%w: reading the header: %w", errKVFrame, err)
	}
	h := kvFrameHeader{
		RequestID:    string(rest[:idLen]),
		PromptTokens: int(binary.BigEndian.Uint32(rest[idLen:])),
	}
	n := binary.BigEndian.Uint64(rest[idLen+4:])
	if n > maxKVPayload {
		return kvFrameHeader{}, fmt.Errorf("%w: payload of %d bytes for %s exceeds %d", errKVFrame, n, h.RequestID, int64(maxKVPayload))
	}
	h.PayloadBytes = int64(n)
	return h, nil
}

func appendKVAck(b []byte, received int64) []byte {
	return binary.BigEndian.AppendUint64(append(b, kvAckMagic...), uint64(received))
}

func readKVAck(r io.Reader) (int64, error) {
	var b [kvAckFrameSize]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, fmt.Errorf("%w: reading the consumer's acknowledgement: %w", errKVFrame, err)
	}
	if string(b[:4]) != kvAckMagic {
		return 0, fmt.Errorf("%w: acknowledgement magic %q, want %q", errKVFrame, b[:4], kvAckMagic)
	}
	return int64(binary.BigEndian.Uint64(b[4:])), nil
}
