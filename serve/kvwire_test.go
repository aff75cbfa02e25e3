package serve

import (
	"bytes"
	"errors"
	"testing"
)

func TestKVFrameHeaderRoundTrip(t *testing.T) {
	for _, h := range []kvFrameHeader{
		{RequestID: "pd-1", PromptTokens: 256, PayloadBytes: 3 << 20},
		{RequestID: string(bytes.Repeat([]byte{'x'}, 255)), PromptTokens: 1<<32 - 1, PayloadBytes: maxKVPayload},
		{RequestID: "z", PromptTokens: 0, PayloadBytes: 0},
	} {
		b, err := h.append(nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readKVFrameHeader(bytes.NewReader(b))
		if err != nil || got != h {
			t.Errorf("round trip of %+v: got %+v, %v", h, got, err)
		}
	}
}

func TestKVFrameHeaderRejects(t *testing.T) {
	good, _ := kvFrameHeader{RequestID: "r", PromptTokens: 1, PayloadBytes: 1}.append(nil)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"wrong magic", append([]byte("HTTP"), good[4:]...)},
		{"wrong version", append(append([]byte(kvMagic), 9), good[5:]...)},
		{"empty id", []byte("SBKV\x01\x00")},
		{"truncated", good[:len(good)-1]},
		{"huge payload", append(good[:len(good)-8], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)},
	} {
		if _, err := readKVFrameHeader(bytes.NewReader(tc.b)); !errors.Is(err, errKVFrame) {
			t.Errorf("%s: err %v, want a malformed KV frame", tc.name, err)
		}
	}
	if _, err := (kvFrameHeader{RequestID: ""}).append(nil); err == nil {
		t.Error("an empty request id was framed")
	}
}

func FuzzReadKVFrameHeader(f *testing.F) {
	good, _ := kvFrameHeader{RequestID: "pd-7", PromptTokens: 12, PayloadBytes: 4096}.append(nil)
	f.Add(good)
	f.Add([]byte("SBKV\x01\xff"))
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := readKVFrameHeader(bytes.NewReader(b))
		if err != nil {
			return
		}
		if h.PayloadBytes < 0 || h.PayloadBytes > maxKVPayload || h.RequestID == "" {
			t.Fatalf("accepted an out-of-range header %+v", h)
		}
		again, err := h.append(nil)
		if err != nil {
			t.Fatalf("re-framing an accepted header: %v", err)
		}
		if !bytes.Equal(again, b[:len(again)]) {
			t.Fatalf("header %+v re-frames as %q, read from %q", h, again, b[:len(again)])
		}
	})
}
