package client

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/workload"
)

// TestDialContextOpensTheConnections: a dialer given in Config opens the
// tuned transport's connections (bench reaches its embedded emulator in
// memory this way), and kept-alive ones are reused as with TCP.
func TestDialContextOpensTheConnections(t *testing.T) {
	const event = `data: {"choices":[{"index":0,"text":" a","finish_reason":"length"}],"usage":{"prompt_tokens":2,"completion_tokens":1}}` + "\n\ndata: [DONE]\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(event))
	}))
	defer srv.Close()
	var dials atomic.Int64
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		dials.Add(1)
		// The URL names another address: only the dialer decides.
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}
	c := newTestClient(t, Config{BaseURL: "http://emulator.invalid:1", Model: "m", DialContext: dial})
	for i := range 3 {
		var rec metrics.Record
		c.Do(context.Background(), &workload.Request{PromptIDs: []int32{1, 2}, PromptLen: 2, MaxTokens: 1}, "", time.Now(), &rec)
		if !rec.Success || rec.OutputLen != 1 {
			t.Fatalf("request %d: success %v, %d tokens, error %q", i, rec.Success, rec.OutputLen, rec.Error)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials for three requests in a row, want 1 (kept alive)", n)
	}
}
