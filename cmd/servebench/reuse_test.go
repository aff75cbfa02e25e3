package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A server that drops every connection after its streamed response without
// "Connection: close" (llama.cpp's server does) must not cost a request:
// bench at concurrency 8 loses none and the records show the resends.
func TestBenchLosesNoRequestOnClosedReusedConnections(t *testing.T) {
	const event = `data: {"choices":[{"index":0,"text":" a","finish_reason":"length"}],"usage":{"prompt_tokens":8,"completion_tokens":1}}` + "\n\ndata: [DONE]\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(rw, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(event), event)
		if rw.Flush() != nil {
			return
		}
		// Close only once the client has sent its next request here, so
		// every reuse meets a dead connection.
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // bounds the test, asserts nothing
		_, _ = rw.Reader.Peek(1)
	}))
	defer srv.Close()
	records := filepath.Join(t.TempDir(), "records.jsonl")
	out, stderr, err := runCLI(t, "bench", "--base-url", srv.URL, "--model", "m", "--num-prompts", "64",
		"--max-concurrency", "8", "--random-input-len", "8", "--random-output-len", "1", "--skip-tokenizer-init",
		"--server-metrics-interval", "0", "--disable-tqdm", "--records", records)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, stderr)
	}
	for _, want := range []string{"Successful requests:                     64", "Failed requests:                         0", "Resends (reused connection had closed):"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	f, err := os.Open(records)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	retried, lines := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec struct {
			Retries int  `json:"retries"`
			Success bool `json:"success"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		lines++
		if rec.Retries > 0 {
			retried++
		}
	}
	if lines != 64 || retried == 0 {
		t.Errorf("%d records, %d with retries; want 64 records and some retries", lines, retried)
	}
}
