package client

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

const (
	// initialSSEBuffer covers a typical chunk many times over while keeping
	// thousands of concurrent streams cheap; the buffer grows for long lines.
	initialSSEBuffer = 4 << 10
	// defaultMaxEventBytes bounds one event (a line or the joined data
	// lines) so a server that never sends a newline cannot exhaust memory.
	defaultMaxEventBytes = 64 << 20
)

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	// Data is the event's data lines joined by "\n"; valid until the next
	// call to next.
	Data []byte
	// IsError is set for "event: error", which some servers use instead of
	// an {"error":...} payload.
	IsError bool
	// At is when the read that completed the event returned, as an offset
	// from the framer's base: bytes that arrive together share one
	// timestamp, however long parsing takes.
	At time.Duration
}

// errEventTooLarge reports an event beyond the framer's limit.
var errEventTooLarge = errors.New("SSE event too large")

// sseFramer splits a text/event-stream into events following the WHATWG
// rules: lines end in "\n", "\r\n" or "\r"; a blank line dispatches; lines
// starting with ':' are comments; "data:" with or without one space; several
// data lines join with "\n"; other fields are ignored except "event: error".
// Unlike browsers it also dispatches a final event that lacks its blank line
// at a clean end of stream, as vLLM's client does.
//
// It does not allocate once its buffers have grown to the stream's largest
// event, and an event with one data line is returned without copying. Not
// safe for concurrent use.
type sseFramer struct {
	src     io.Reader
	base    time.Time
	buf     []byte
	r, w    int // buf[r:w] is read but not yet framed
	eof     bool
	readErr error
	readAt  time.Duration
	// watch, when set, learns of every read that returned bytes.
	watch *stallWatch
	// An event's only data line so far stays in buf at [lineStart,lineEnd)
	// while inBuf; a second line or a refill moves it to data.
	inBuf              bool
	lineStart, lineEnd int
	data               []byte
	maxEvent           int
}

func newSSEFramer() *sseFramer {
	return &sseFramer{buf: make([]byte, initialSSEBuffer), maxEvent: defaultMaxEventBytes}
}

// reset points the framer at a new stream whose timestamps are offsets
// from base, keeping its buffers.
func (f *sseFramer) reset(src io.Reader, base time.Time) {
	f.src, f.base = src, base
	f.r, f.w = 0, 0
	f.eof = false
	f.readErr = nil
	f.readAt = 0
	f.watch = nil
	f.inBuf = false
	f.data = f.data[:0]
}

// next fills ev with the next event. It returns io.EOF at the end of the
// stream after the last event, or the read error that cut the stream.
func (f *sseFramer) next(ev *sseEvent) error {
	f.data = f.data[:0]
	f.inBuf = false
	hasData := false
	isError := false
	for {
		start, end, ok := f.line()
		if !ok {
			switch {
			case f.readErr != nil:
				// A cut stream reports the cut, not a half event.
				return f.readErr
			case !f.eof:
				if f.inBuf { // the refill may move the buffer's contents
					f.data = append(f.data[:0], f.buf[f.lineStart:f.lineEnd]...)
					f.inBuf = false
				}
				if err := f.fill(); err != nil {
					return err
				}
				continue
			case f.r < f.w: // a final line without terminator
				start, end = f.r, f.w
				if f.buf[end-1] == '\r' {
					end--
				}
				f.r = f.w
			case hasData:
				f.dispatch(ev, isError)
				return nil
			default:
				return io.EOF
			}
		}
		if start == end {
			if hasData {
				f.dispatch(ev, isError)
				return nil
			}
			isError = false
			continue
		}
		line := f.buf[start:end]
		if line[0] == ':' {
			continue
		}
		fieldEnd, valueStart := end, end
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			fieldEnd, valueStart = start+i, start+i+1
			if valueStart < end && f.buf[valueStart] == ' ' {
				valueStart++
			}
		}
		switch string(f.buf[start:fieldEnd]) {
		case "data":
			switch {
			case !hasData:
				f.inBuf, f.lineStart, f.lineEnd = true, valueStart, end
				hasData = true
			case f.inBuf:
				f.data = append(f.data[:0], f.buf[f.lineStart:f.lineEnd]...)
				f.inBuf = false
				fallthrough
			default:
				if len(f.data)+1+end-valueStart > f.maxEvent {
					return fmt.Errorf("%w: data lines exceed %d bytes", errEventTooLarge, f.maxEvent)
				}
				f.data = append(f.data, '\n')
				f.data = append(f.data, f.buf[valueStart:end]...)
			}
		case "event":
			isError = string(f.buf[valueStart:end]) == "error"
		}
	}
}

func (f *sseFramer) dispatch(ev *sseEvent, isError bool) {
	if f.inBuf {
		ev.Data = f.buf[f.lineStart:f.lineEnd]
	} else {
		ev.Data = f.data
	}
	ev.IsError = isError
	ev.At = f.readAt
}

// line finds the next complete line in the buffer and returns its bounds
// without the terminator.
func (f *sseFramer) line() (start, end int, ok bool) {
	b := f.buf[f.r:f.w]
	i := bytes.IndexByte(b, '\n')
	var next int
	if i >= 0 {
		end, next = i, i+1
		if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
			if j == i-1 {
				end = j
			} else { // a bare CR ends an earlier line
				end, next = j, j+1
			}
		}
	} else {
		j := bytes.IndexByte(b, '\r')
		// A CR as the last byte may be the first half of CRLF.
		if j < 0 || j == len(b)-1 {
			return 0, 0, false
		}
		end, next = j, j+1
	}
	start = f.r
	f.r += next
	return start, start + end, true
}

// fill reads more bytes, compacting or growing the buffer first.
func (f *sseFramer) fill() error {
	if f.r > 0 {
		n := copy(f.buf, f.buf[f.r:f.w])
		f.r, f.w = 0, n
	}
	if f.w == len(f.buf) {
		if len(f.buf) >= f.maxEvent {
			return fmt.Errorf("%w: a line exceeds %d bytes", errEventTooLarge, f.maxEvent)
		}
		grown := make([]byte, min(2*len(f.buf), f.maxEvent))
		copy(grown, f.buf[:f.w])
		f.buf = grown
	}
	for range 100 {
		n, err := f.src.Read(f.buf[f.w:])
		if n > 0 {
			f.readAt = time.Since(f.base)
			f.watch.markRead(f.readAt)
			f.w += n
		}
		if err != nil {
			if err == io.EOF {
				f.eof = true
			} else {
				f.readErr = err
			}
			return nil
		}
		if n > 0 {
			return nil
		}
	}
	f.readErr = io.ErrNoProgress
	return nil
}

// firstByte returns the first byte of the stream that is not JSON
// whitespace, reading as needed; ok is false at end of stream.
func (f *sseFramer) firstByte() (c byte, ok bool, err error) {
	for {
		for i := f.r; i < f.w; i++ {
			switch f.buf[i] {
			case ' ', '\t', '\n', '\r':
			default:
				return f.buf[i], true, nil
			}
		}
		if f.readErr != nil {
			return 0, false, f.readErr
		}
		if f.eof {
			return 0, false, nil
		}
		if err := f.fill(); err != nil {
			return 0, false, err
		}
	}
}

// readAll reads the rest of the stream into the buffer and returns it,
// for a response that is one JSON document rather than events.
func (f *sseFramer) readAll() ([]byte, error) {
	for !f.eof {
		if f.readErr != nil {
			return nil, f.readErr
		}
		if err := f.fill(); err != nil {
			return nil, err
		}
	}
	b := f.buf[f.r:f.w]
	f.r = f.w
	return b, nil
}
