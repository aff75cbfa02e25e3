// Package metrics holds the per-request Record that both a benchmark run and
// a simulation produce, and turns a set of records into a Summary using
// exactly the definitions of vLLM's benchmark_serving.py.
package metrics

import "time"

// Record is one request's outcome, measured on the wall clock by bench or
// predicted on a virtual clock by sim. All instants are offsets from the
// start of the run (the moment the first request was due), so records from
// bench and sim line up.
//
// The three instants before the request reaches the server keep a slow client
// from hiding: Scheduled is when the open-loop schedule said to send it,
// Dispatched is when the pacer actually released it (Dispatched-Scheduled is
// the send lag), and Start is when it was written to the connection after
// waiting for a --max-concurrency slot (Start-Dispatched is the client queue
// time, vLLM's client_queue_time).
type Record struct {
	Index     int    `json:"index"`                // position in the workload
	RequestID string `json:"request_id,omitempty"` // x-request-id sent, if any
	Warmup    bool   `json:"warmup,omitempty"`     // excluded from the summary

	Scheduled  time.Duration `json:"scheduled_ns"`
	Dispatched time.Duration `json:"dispatched_ns"`
	Start      time.Duration `json:"start_ns"`

	// TTFT is Start → first chunk that carries choices (vLLM counts any such
	// chunk, even with empty text). Latency (E2EL) is Start → last such chunk;
	// trailing usage-only chunks and [DONE] are excluded, as in vLLM.
	TTFT    time.Duration `json:"ttft_ns"`
	Latency time.Duration `json:"latency_ns"`

	// ITL holds the gaps between consecutive token-bearing chunks after the
	// first, already split per token: a chunk carrying k tokens (known from
	// continuous usage deltas) after a gap g contributes k entries of g/k, so
	// multi-token chunks (speculative decoding, batched flushes) do not
	// inflate ITL. With no per-chunk token counts each chunk is one entry,
	// which is vLLM's definition.
	ITL []time.Duration `json:"itl_ns,omitempty"`
	// FirstChunkTokens is how many tokens the first token chunk carried when
	// known (>1 only with per-chunk usage); 0 means 1.
	FirstChunkTokens int `json:"first_chunk_tokens,omitempty"`

	PromptLen int `json:"prompt_len"` // input tokens; server usage overrides the dataset's count
	OutputLen int `json:"output_len"` // output tokens: usage, else tokenizer, else chunk count
	MaxTokens int `json:"max_tokens"` // what was requested
	// CachedTokens is prompt_tokens_details.cached_tokens when the server reports it.
	CachedTokens int `json:"cached_tokens,omitempty"`
	// OutputLenSource says where OutputLen came from: "usage", "tokenizer" or "chunks".
	OutputLenSource string `json:"output_len_source,omitempty"`

	Success bool   `json:"success"`
	Error   string `json:"error,omitempty"`
	// Status is the HTTP status code; 0 when no response arrived.
	Status int `json:"status,omitempty"`
	// Retries counts resends after a reused connection failed before any
	// response byte arrived (the server had closed it); Start is still the
	// first attempt's, so the lost time counts against the request.
	Retries int `json:"retries,omitempty"`
	// ConnReused is true when the response came on a connection taken from
	// the client's idle pool (kept alive from an earlier request).
	ConnReused bool `json:"conn_reused,omitempty"`

	GeneratedText string `json:"generated_text,omitempty"`
}

// End is the instant the last token chunk arrived (or the failure was seen).
func (r *Record) End() time.Duration { return r.Start + r.Latency }

// TPOT is vLLM's time per output token excluding the first, defined only for
// successful requests with more than one output token.
func (r *Record) TPOT() (time.Duration, bool) {
	if !r.Success || r.OutputLen <= 1 {
		return 0, false
	}
	return (r.Latency - r.TTFT) / time.Duration(r.OutputLen-1), true
}

// SendLag is how late the pacer released the request against its schedule.
func (r *Record) SendLag() time.Duration { return r.Dispatched - r.Scheduled }

// QueueTime is the client-side wait for a concurrency slot (vLLM's
// client_queue_time).
func (r *Record) QueueTime() time.Duration { return r.Start - r.Dispatched }
