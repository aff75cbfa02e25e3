package tokenizer

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/llamacppfake"
)

// delayedACK is Linux's shortest delayed-ACK timeout (TCP_DELACK_MIN, 40
// ms): a call held by it takes at least this long, however idle the
// machine, while one that is not takes well under a millisecond. The check
// below compares the median call with this floor; it sets no performance
// target.
const delayedACK = 40 * time.Millisecond

// TestServerTokenizerNeverWaitsOnDelayedACK: llama.cpp leaves Nagle on and
// sends headers and body in two writes, so on a kept-alive connection the
// body waits for the client's delayed ACK of the headers. The server
// tokenizer's connections must not, whatever HTTP client it is given; the
// fake reproduces the stall (every call past 40 ms) with a plain client.
func TestServerTokenizerNeverWaitsOnDelayedACK(t *testing.T) {
	srv, err := llamacppfake.Start(llamacppfake.Options{Nagle: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tc := range []struct {
		name   string
		client *http.Client
	}{
		{"no client given", nil},
		{"a client with a timeout (bench's)", &http.Client{Timeout: 30 * time.Second}},
		{"a client with its own transport", &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewServer(srv.URL, Options{HTTPClient: tc.client})
			if err != nil {
				t.Fatal(err)
			}
			const calls = 21
			took := make([]time.Duration, 0, calls)
			for i := range calls {
				start := time.Now()
				ids, err := s.Encode(context.Background(), "Hello, world")
				if err == nil {
					_, err = s.Decode(context.Background(), ids)
				}
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				took = append(took, time.Since(start))
			}
			// Two requests on one kept-alive connection: a stall holds each,
			// so a stalling tokenizer takes at least 80 ms for all but the
			// first pair, and the median pair is never below that. A busy
			// machine can slow a few pairs of a tokenizer that does not
			// stall, never half of them by a delayed ACK's length.
			slices.Sort(took)
			if median := took[calls/2]; median >= 2*delayedACK {
				t.Errorf("median Encode+Decode pair took %v (of %v): the tokenizer's connections wait on delayed ACKs", median, took)
			}
		})
	}
}
