package client

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

type framedEvent struct {
	Data    string
	IsError bool
}

// referenceFrames is a direct, slow transcription of the WHATWG
// event-stream rules (plus dispatch of a final unterminated event), the
// oracle for the framer.
func referenceFrames(input string) []framedEvent {
	var lines []string
	for len(input) > 0 {
		i := strings.IndexAny(input, "\r\n")
		if i < 0 {
			lines = append(lines, input)
			break
		}
		lines = append(lines, input[:i])
		if input[i] == '\r' && i+1 < len(input) && input[i+1] == '\n' {
			i++
		}
		input = input[i+1:]
	}
	var out []framedEvent
	var data []string
	isError := false
	for _, line := range lines {
		if line == "" {
			if data != nil {
				out = append(out, framedEvent{strings.Join(data, "\n"), isError})
			}
			data, isError = nil, false
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, ""
		if i := strings.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], strings.TrimPrefix(line[i+1:], " ")
		}
		switch field {
		case "data":
			data = append(data, value)
		case "event":
			isError = value == "error"
		}
	}
	if data != nil {
		out = append(out, framedEvent{strings.Join(data, "\n"), isError})
	}
	return out
}

// frameAll runs the framer over r, with an initial buffer of bufSize bytes
// to exercise compaction and growth.
func frameAll(r io.Reader, bufSize int) ([]framedEvent, error) {
	f := newSSEFramer()
	f.buf = make([]byte, bufSize)
	f.reset(r, time.Now())
	var out []framedEvent
	var ev sseEvent
	for {
		err := f.next(&ev)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, framedEvent{string(ev.Data), ev.IsError})
	}
}

func TestSSEFramer(t *testing.T) {
	long := strings.Repeat("x", 3<<20)
	tests := []struct {
		name string
		in   string
		want []framedEvent
	}{
		{"two events", "data: a\n\ndata: b\n\n", []framedEvent{{Data: "a"}, {Data: "b"}}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []framedEvent{{Data: "a"}, {Data: "b"}}},
		{"bare CR", "data: a\r\rdata: b\r\r", []framedEvent{{Data: "a"}, {Data: "b"}}},
		{"no space after colon", "data:a\n\n", []framedEvent{{Data: "a"}}},
		{"only one space stripped", "data:  a\n\n", []framedEvent{{Data: " a"}}},
		{"comments and keep-alives", ": ping\n\n:\ndata: a\n: mid\n\n", []framedEvent{{Data: "a"}}},
		{"multi-line data joined", "data: a\ndata: b\ndata:\n\n", []framedEvent{{Data: "a\nb\n"}}},
		{"other fields ignored", "id: 1\nretry: 10\nevent: message\ndata: a\n\n", []framedEvent{{Data: "a"}}},
		{"error event", "event: error\ndata: {\"error\":\"x\"}\n\ndata: b\n\n", []framedEvent{{Data: `{"error":"x"}`, IsError: true}, {Data: "b"}}},
		{"event type reset by blank line", "event: error\n\ndata: a\n\n", []framedEvent{{Data: "a"}}},
		{"final event without blank line", "data: a\n\ndata: [DONE]", []framedEvent{{Data: "a"}, {Data: "[DONE]"}}},
		{"final line ending in CR", "data: a\r", []framedEvent{{Data: "a"}}},
		{"field name without colon", "data\n\n", []framedEvent{{Data: ""}}},
		{"blank lines only", "\n\n\r\n", nil},
		{"empty", "", nil},
		{"long line", "data: " + long + "\n\ndata: b\n\n", []framedEvent{{Data: long}, {Data: "b"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, referenceFrames(tc.in)); d != "" {
				t.Fatalf("reference framer disagrees with the test (-want +got):\n%s", d)
			}
			readers := map[string]func() io.Reader{
				"whole":    func() io.Reader { return strings.NewReader(tc.in) },
				"one byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(tc.in)) },
				"half":     func() io.Reader { return iotest.HalfReader(strings.NewReader(tc.in)) },
			}
			for name, r := range readers {
				if name == "one byte" && len(tc.in) > 1<<16 {
					continue
				}
				got, err := frameAll(r(), 16)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("%s reads (-want +got):\n%s", name, d)
				}
			}
		})
	}
}

func TestSSEFramerErrors(t *testing.T) {
	t.Run("cut stream reports the cut, not the half event", func(t *testing.T) {
		r := io.MultiReader(strings.NewReader("data: a\n\ndata: {\"cho"), iotest.ErrReader(io.ErrUnexpectedEOF))
		got, err := frameAll(r, 64)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("error = %v, want unexpected EOF", err)
		}
		if d := cmp.Diff([]framedEvent{{Data: "a"}}, got); d != "" {
			t.Errorf("events before the cut (-want +got):\n%s", d)
		}
	})
	t.Run("line beyond the limit", func(t *testing.T) {
		f := newSSEFramer()
		f.maxEvent = 1 << 10
		f.reset(strings.NewReader("data: "+strings.Repeat("x", 4<<10)+"\n\n"), time.Now())
		var ev sseEvent
		if err := f.next(&ev); !errors.Is(err, errEventTooLarge) {
			t.Fatalf("error = %v, want errEventTooLarge", err)
		}
	})
	t.Run("joined data beyond the limit", func(t *testing.T) {
		f := newSSEFramer()
		f.maxEvent = 1 << 10
		f.reset(strings.NewReader(strings.Repeat("data: "+strings.Repeat("x", 200)+"\n", 8)+"\n"), time.Now())
		var ev sseEvent
		if err := f.next(&ev); !errors.Is(err, errEventTooLarge) {
			t.Fatalf("error = %v, want errEventTooLarge", err)
		}
	})
	t.Run("reader that never makes progress", func(t *testing.T) {
		_, err := frameAll(zeroReader{}, 64)
		if !errors.Is(err, io.ErrNoProgress) {
			t.Fatalf("error = %v, want io.ErrNoProgress", err)
		}
	})
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

// TestSSEFramerTimestamps checks that an event is stamped with the read
// that completed it, on synctest's fake clock.
func TestSSEFramerTimestamps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		go func() {
			time.Sleep(10 * time.Millisecond)
			_, _ = io.WriteString(pw, "data: a\n\ndata: b\n") // a completes, b does not
			time.Sleep(5 * time.Millisecond)
			_, _ = io.WriteString(pw, "\ndata: c\n\n")
			_ = pw.Close()
		}()
		f := newSSEFramer()
		f.reset(pr, time.Now())
		var ev sseEvent
		want := []struct {
			data string
			at   time.Duration
		}{{"a", 10 * time.Millisecond}, {"b", 15 * time.Millisecond}, {"c", 15 * time.Millisecond}}
		for _, w := range want {
			if err := f.next(&ev); err != nil {
				t.Fatal(err)
			}
			if string(ev.Data) != w.data || ev.At != w.at {
				t.Errorf("event %q at %v, want %q at %v", ev.Data, ev.At, w.data, w.at)
			}
		}
		if err := f.next(&ev); err != io.EOF {
			t.Errorf("after the last event: %v, want EOF", err)
		}
	})
}

// FuzzSSEFramer compares the framer with the reference transcription of the
// spec, reading the input in pieces of a fuzzed size through a small buffer.
func FuzzSSEFramer(f *testing.F) {
	for _, s := range []string{
		"data: a\n\ndata: b\r\n\r\n", "data: a\r\rdata:b\r", ": c\nevent: error\ndata: x\ndata: y\n\n",
		"data: [DONE]", "\r\n\r\n", "data\n\nevent\n\n", "data: a\r", "data: {\"choices\":[]}\n\n",
	} {
		f.Add([]byte(s), uint8(3))
	}
	for _, line := range capturedDataLines(f) {
		f.Add(append(append([]byte("data: "), line...), "\n\n"...), uint8(200))
	}
	f.Fuzz(func(t *testing.T, in []byte, piece uint8) {
		r := &pieceReader{data: in, piece: int(piece)%64 + 1}
		got, err := frameAll(r, 8)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(referenceFrames(string(in)), got); d != "" {
			t.Fatalf("framing %q in pieces of %d (-reference +framer):\n%s", in, r.piece, d)
		}
	})
}

type pieceReader struct {
	data  []byte
	piece int
}

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.piece)], r.data)
	r.data = r.data[n:]
	return n, nil
}
