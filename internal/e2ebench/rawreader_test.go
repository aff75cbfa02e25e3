package e2ebench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// runRawReader is the reference client of BenchmarkRawReaderCPUPerChunk.
// It takes bench's arguments (only --base-url, --num-prompts and
// --random-output-len matter), sends every request at once, each on its own
// connection, and reads each stream to its end, stamping every read as
// bench does. It counts SSE events rather than parsing them and fails
// unless every stream brought its output tokens plus the usage chunk and
// [DONE].
func runRawReader(args []string) error {
	value := func(name string) string {
		for i, a := range args[:max(len(args)-1, 0)] {
			if a == name {
				return args[i+1]
			}
		}
		return ""
	}
	addr := strings.TrimPrefix(value("--base-url"), "http://")
	requests, err1 := strconv.Atoi(value("--num-prompts"))
	output, err2 := strconv.Atoi(value("--random-output-len"))
	if addr == "" || err1 != nil || err2 != nil {
		return fmt.Errorf("raw reader: need --base-url, --num-prompts and --random-output-len, got %q", args)
	}
	body := fmt.Sprintf(`{"model":"m","prompt":"x","max_tokens":%d,"stream":true}`, output)
	request := []byte(fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body))

	base := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, requests)
	for i := range requests {
		wg.Go(func() { errs[i] = readRawStream(addr, request, output+2, base) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("raw reader: %w", err)
	}
	fmt.Printf("Successful requests:                     %-10d\n", requests)
	return nil
}

// readRawStream sends request and reads the response to EOF, stamping each
// read and counting the blank lines that end SSE events.
func readRawStream(addr string, request []byte, wantEvents int, base time.Time) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Write(request); err != nil {
		return err
	}
	buf := make([]byte, 4<<10)
	readAt := make([]time.Duration, 0, wantEvents+4)
	events := 0
	var prev byte
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			readAt = append(readAt, time.Since(base))
			events += bytes.Count(buf[:n], []byte("\n\n"))
			if prev == '\n' && buf[0] == '\n' {
				events++
			}
			prev = buf[n-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if events != wantEvents {
		return fmt.Errorf("stream brought %d events in %d reads, want %d", events, len(readAt), wantEvents)
	}
	return nil
}
