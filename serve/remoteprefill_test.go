package serve

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKVCacheTransferLatency: with --kv-cache-transfer-latency a request
// carrying kv_transfer_params.do_remote_prefill skips the 100 ms TTFT: it
// waits 30 ms for its KV and gets its first token with the next 10 ms
// decode step. A request without the field, or with it false, keeps the
// TTFT. Times are the client's, on the bubble's clock.
func TestKVCacheTransferLatency(t *testing.T) {
	const ttft, itl, transfer = 100 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond
	for _, tc := range []struct {
		name     string
		params   string
		wantTTFT time.Duration
	}{
		{"remote prefill", `,"kv_transfer_params":{"do_remote_prefill":true,"remote_engine_id":"p0"}`, transfer + itl},
		{"remote decode only", `,"kv_transfer_params":{"do_remote_prefill":false,"do_remote_decode":true}`, ttft},
		{"no kv_transfer_params", ``, ttft},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.StepModel = fixedModel(t, FixedLatency{TimeToFirstToken: ttft, InterTokenLatency: itl, KVCacheTransferLatency: transfer})
			serveInBubble(t, cfg, func(l *pipeListener) {
				conn := l.dial()
				defer conn.Close()
				req := `{"prompt":"hello","max_tokens":5,"ignore_eos":true,"stream":true` + tc.params + `}`
				start := time.Now()
				_, _ = io.WriteString(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(req))+"\r\n\r\n"+req)
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var firstToken, last time.Duration
				tokens := 0
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					if strings.Contains(sc.Text(), `"text":`) {
						if tokens == 0 {
							firstToken = time.Since(start)
						}
						tokens++
						last = time.Since(start)
					}
				}
				if tokens != 5 || firstToken != tc.wantTTFT || last-firstToken != 4*itl {
					t.Errorf("%d tokens, first after %v, the rest over %v; want 5, first after %v, the rest over %v", tokens, firstToken, last-firstToken, tc.wantTTFT, 4*itl)
				}
			})
		})
	}
}
