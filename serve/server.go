package serve

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/internal/mix"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/tokenizer"
)

// DefaultTokenizer is the built-in encoding used when Config.Tokenizer is nil.
const DefaultTokenizer = "cl100k_base"

// Server is an emulated vLLM server: an OpenAI-compatible HTTP API in front
// of the engine model, driven on the wall clock by Run.
type Server struct {
	cfg     Config
	eng     *engine.Engine // owned by the Run goroutine
	tok     tokenizer.Tokenizer
	text    *textGen
	metrics *promMetrics
	log     *slog.Logger
	lag     lagHistogram // token write lag
	wakeLag lagHistogram // step loop wake-up lag
	stepLag lagHistogram // step release lag against the model's timeline
	// slowHost, when set, runs inside every step: tests use it to play a
	// loaded host that makes the loop fall behind.
	slowHost func()
	base     time.Time // engine clock zero
	handler  http.Handler

	// coarseClock makes the step loop sleep on runtime timers only: tests
	// under testing/synctest run on a fake clock that clock.Sleeper's nanosleep (a real
	// system call) cannot advance.
	coarseClock bool

	nextID atomic.Uint64
	// instanceNonce makes response IDs unique across servers and restarts:
	// IDs derived from the seed alone repeat whenever two instances share
	// one, and routers and log pipelines key on them. It never touches the
	// seeded text or timing.
	instanceNonce uint64
	faultSeq      atomic.Uint64
	started       atomic.Bool
	// logged is closed once Run has logged the startup lines, so Start
	// returns (and callers log "Starting vLLM API server") after them, in
	// vLLM's order.
	logged   chan struct{}
	handlers inflight
	kv       *kvSide // nil unless Config.KVTransfer is set

	// The inbox is how handlers reach the step loop without blocking it:
	// they append under mu and poke wake.
	mu       sync.Mutex
	inbox    []*stream
	aborts   []*stream
	commands []func(*driver)
	closed   bool
	deadErr  error // the engine died (swap space exhausted)
	// lastArrival is the latest engine arrival given (with Ingest);
	// lastSpaced the latest completions request's (Config.IngestSpacing).
	lastArrival, lastSpaced time.Duration
	// loopFree is when the event loop finishes the preparations queued so
	// far (Config.ChatPrepare); handOffScan is the last inbox entry known
	// to have reached the loop before the head's preparation ended.
	loopFree    time.Duration
	handOffScan int
	wake        chan struct{}
	stopped     chan struct{} // closed when Run returns
	deliverer   deliverer
}

func newInstanceNonce() uint64 {
	var b [8]byte
	_, _ = crand.Read(b[:]) // crypto/rand's Read never fails on supported platforms
	return binary.LittleEndian.Uint64(b[:])
}

// New validates cfg, sizes the engine and loads the tokenizer. Errors carry
// vLLM's texts where vLLM has one (they come from engine.Config.Validate).
func New(cfg Config) (*Server, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	eng, err := engine.New(c.Engine)
	if err != nil {
		return nil, err
	}
	tok := c.Tokenizer
	if tok == nil {
		tok, err = tokenizer.New(context.Background(), DefaultTokenizer, tokenizer.Options{})
		if err != nil {
			return nil, fmt.Errorf("serve: loading the default tokenizer %s: %w", DefaultTokenizer, err)
		}
	}
	text, err := newTextGen(context.Background(), tok)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	log := c.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		instanceNonce: newInstanceNonce(),
		cfg:           c,
		eng:           eng,
		tok:           tok,
		text:          text,
		metrics:       newPromMetrics(c.ServedModelNames[0], c.Engine),
		log:           log,
		base:          time.Now(),
		wake:          make(chan struct{}, 1),
		stopped:       make(chan struct{}),
		logged:        make(chan struct{}),
		lastSpaced:    math.MinInt64 / 2, // no completions request handed on yet
	}
	s.deliverer = deliverer{now: s.now, wake: make(chan struct{}, 1)}
	if c.KVTransfer != nil {
		if c.KVTransfer.Role == KVConsumer && c.Engine.Version == engine.V0 {
			// V0 schedules a transferred prompt as a prefill whose forward
			// pass the connector bypasses (sim does the same).
			s.cfg.StepModel = perf.RemoteKV{Inner: c.StepModel}
		}
		if s.kv, err = newKVSide(*c.KVTransfer, s.metrics.reg); err != nil {
			return nil, err
		}
	}
	s.handler = s.routes()
	return s, nil
}

// Handler serves the OpenAI and vLLM endpoints. Requests wait for Run.
func (s *Server) Handler() http.Handler { return s.handler }

// Tokenizer is the tokenizer prompts are counted with.
func (s *Server) Tokenizer() tokenizer.Tokenizer { return s.tok }

// WriteLag summarizes how late streamed tokens were written relative to the
// instant the engine model made them due.
func (s *Server) WriteLag() LagStats { return s.lag.stats() }

// StepWakeLag summarizes how late the step loop woke up after each step's
// due instant (timer and scheduling latency): a floor under WriteLag.
func (s *Server) StepWakeLag() LagStats { return s.wakeLag.stats() }

// StepLag summarizes how late each engine step's tokens were released
// against the model's timeline: the emulator's own lag, exported on
// /metrics as servebench:step_loop_lag_seconds.
func (s *Server) StepLag() LagStats { return s.stepLag.stats() }

// now is the engine clock: time since the server was created.
func (s *Server) now() time.Duration { return time.Since(s.base) }

// StartupLines are the KV-cache sizing lines vLLM logs at startup:
// "# GPU blocks: N, # CPU blocks: M" (V0) or "GPU KV cache size: N tokens"
// and "Maximum concurrency for X tokens per request: Y.YYx" (V1).
func (s *Server) StartupLines() []string {
	ec := s.cfg.Engine
	c := perf.Capacity{EngineVersion: string(ec.Version), GPUBlocks: ec.NumGPUBlocks, CPUBlocks: ec.NumCPUBlocks,
		BlockSize: ec.BlockSize, MaxModelLen: ec.MaxModelLen}
	return c.LogLines()
}

var errServerClosed = errors.New("server is shutting down")

// submit hands a new request to the step loop, whose engine takes it
// Config.Ingest after the server's event loop hands it on (at once, or
// after the chat preparations queued before it: Config.ChatPrepare),
// counted from when its handler accepted it, or at once if the handler
// took longer, as vLLM's API server spends that long on a request before
// its engine queues it. The loop keeps such requests in the inbox, so
// neither it nor the handler waits, and a client that leaves meanwhile is
// dropped before the engine sees it.
func (s *Server) submit(st *stream) error {
	s.mu.Lock()
	switch {
	case s.deadErr != nil:
		s.mu.Unlock()
		return s.deadErr
	case s.closed:
		s.mu.Unlock()
		return errServerClosed
	}
	if s.cfg.delaysArrival() {
		// The event loop takes requests in submit order and prepares chat
		// ones; a request's hand-off waits for the preparations queued
		// before its own ended, which later submits may add to, so drain
		// sets its Arrival once its preparation is over.
		st.submitted = s.now()
		st.from = st.submitted
		if st.accepted {
			st.from = st.acceptedAt
		}
		st.prepared = max(st.from, s.loopFree)
		if st.chat {
			st.prepared += s.cfg.ChatPrepare
		}
		s.loopFree = st.prepared
		st.handOffPending = true
	}
	s.inbox = append(s.inbox, st)
	s.mu.Unlock()
	s.poke()
	return nil
}

// resolveHandOff sets the Arrival of s.inbox[i], whose preparation is
// over and which is next to leave: the event loop hands it on after the
// preparations of the requests that reached the loop before that (the
// inbox is in submit order), then Ingest runs (and a chat request's
// ChatIngest). The scan resumes where the previous head's stopped, as
// preparations end in inbox order. Call with s.mu held.
func (s *Server) resolveHandOff(i int) {
	head := s.inbox[i]
	j := max(s.handOffScan, i)
	for j+1 < len(s.inbox) && s.inbox[j+1].from <= head.prepared {
		j++
	}
	s.handOffScan = j
	ingest := s.cfg.Ingest
	if head.chat {
		ingest += s.cfg.ChatIngest
	}
	head.req.Arrival = max(s.inbox[j].prepared+ingest, head.submitted, s.lastArrival)
	if !head.chat && s.cfg.IngestSpacing > 0 {
		head.req.Arrival = max(head.req.Arrival, s.lastSpaced+s.cfg.IngestSpacing)
		s.lastSpaced = head.req.Arrival
	}
	s.lastArrival = head.req.Arrival
	head.handOffPending = false
}

// abort tells the step loop a client went away.
func (s *Server) abort(st *stream) {
	if !st.abortSent.CompareAndSwap(false, true) {
		return
	}
	s.mu.Lock()
	if !s.closed {
		s.aborts = append(s.aborts, st)
	}
	s.mu.Unlock()
	s.poke()
}

func (s *Server) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// do runs fn on the step loop between steps and waits for it.
func (s *Server) do(ctx context.Context, fn func(*driver)) error {
	done := make(chan struct{})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errServerClosed
	}
	s.commands = append(s.commands, func(d *driver) { fn(d); close(done) })
	s.mu.Unlock()
	s.poke()
	select {
	case <-done:
		return nil
	case <-s.stopped:
		select {
		case <-done:
			return nil
		default:
			return errServerClosed
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Snapshot is the engine's state between two steps.
type Snapshot struct {
	Engine  engine.Stats
	KVUsage float64
	// Idle: nothing running, waiting or swapped.
	Idle bool
	// Requests is the number of requests the step loop tracks (admitted
	// and not finished).
	Requests int
	// ModelTime is the total duration of all steps per the step model;
	// BusyWall is the wall-clock time the loop spent running them. Their
	// ratio is the fraction of the model's ideal throughput delivered.
	ModelTime, BusyWall time.Duration
	// ClockResets counts the times the loop fell more than maxClockDebt
	// behind the model's timeline and restarted it from the wall clock.
	ClockResets int64
	// Behind is the total time the timeline was pushed back at those
	// resets: how much longer the run took than the model says.
	Behind time.Duration
}

// Snapshot reads the engine state from the step loop; Run must be running.
func (s *Server) Snapshot(ctx context.Context) (Snapshot, error) {
	var snap Snapshot
	err := s.do(ctx, func(d *driver) {
		snap = Snapshot{
			Engine:      d.eng.Stats(),
			KVUsage:     d.eng.KVUsage(),
			Idle:        d.eng.Idle(),
			Requests:    len(d.streams),
			ModelTime:   d.modelTime,
			BusyWall:    d.busyWall,
			ClockResets: d.clockResets,
			Behind:      d.behind,
		}
	})
	return snap, err
}

// ResetPrefixCache is vLLM's /reset_prefix_cache: it reports whether the
// engine dropped its cached blocks (false while running requests hold some).
func (s *Server) ResetPrefixCache(ctx context.Context) (bool, error) {
	var ok bool
	err := s.do(ctx, func(d *driver) {
		ok = d.eng.ResetPrefixCache()
		if ok {
			d.prefixWindow.reset()
		}
	})
	return ok, err
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(path string, method string, h http.HandlerFunc) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
				w.Header().Set("Allow", method)
				writeDetail(w, http.StatusMethodNotAllowed, "Method Not Allowed")
				return
			}
			h(w, r)
		})
	}
	handle("/v1/completions", http.MethodPost, func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, false) })
	handle("/v1/chat/completions", http.MethodPost, func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, true) })
	handle("/v1/models", http.MethodGet, s.models)
	handle("/health", http.MethodGet, s.health)
	handle("/version", http.MethodGet, s.version)
	handle("/tokenize", http.MethodPost, s.tokenize)
	handle("/detokenize", http.MethodPost, s.detokenize)
	handle("/reset_prefix_cache", http.MethodPost, s.resetPrefixCache)
	handle("/kv_transfer", http.MethodGet, s.kvTransferInfo)
	handle("/metrics", http.MethodGet, promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}).ServeHTTP)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { writeDetail(w, http.StatusNotFound, "Not Found") })

	var h http.Handler = mux
	if s.cfg.APIKey != "" {
		h = requireAPIKey(s.cfg.APIKey, h)
	}
	return s.track(bodyDeadline(s.cfg.BodyReadTimeout, h))
}

// track counts in-flight handlers so Close can wait for them.
func (s *Server) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.handlers.add()
		defer s.handlers.done()
		next.ServeHTTP(w, r)
	})
}

// inflight counts running handlers; idle returns a channel closed when
// none is running (a WaitGroup may not see Add while someone Waits).
type inflight struct {
	mu   sync.Mutex
	n    int
	zero chan struct{}
}

func (f *inflight) add() {
	f.mu.Lock()
	if f.n == 0 {
		f.zero = make(chan struct{})
	}
	f.n++
	f.mu.Unlock()
}

func (f *inflight) done() {
	f.mu.Lock()
	f.n--
	if f.n == 0 {
		close(f.zero)
	}
	f.mu.Unlock()
}

func (f *inflight) idle() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	return f.zero
}

// publicPaths answer without the API key: probes and scrapers, as in
// vLLM's PUBLIC_ENDPOINTS.
var publicPaths = map[string]bool{"/health": true, "/version": true, "/metrics": true}

// requireAPIKey is vLLM's --api-key middleware: a missing or wrong key gets
// {"error":"Unauthorized"}, the scheme is matched case-insensitively, and
// the key is compared in constant time (through SHA-256, so not even its
// length leaks). vLLM 0.8 guards only /v1 paths, leaving /tokenize,
// /detokenize and /reset_prefix_cache open; newer vLLM guards every route
// but the public ones, and so does this server: /tokenize does real work.
func requireAPIKey(key string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(key))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodOptions && !publicPaths[r.URL.Path] && !bearerMatches(r.Header.Get("Authorization"), want) {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func bearerMatches(header string, want [sha256.Size]byte) bool {
	scheme, token, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "bearer") {
		return false
	}
	got := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// writeDetail is FastAPI's body for routing errors.
func writeDetail(w http.ResponseWriter, status int, detail string) {
	writeJSON(w, status, map[string]string{"detail": detail})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (s *Server) servesModel(name string) bool {
	return name == "" || slices.Contains(s.cfg.ServedModelNames, name)
}

type modelCard struct {
	ID          string            `json:"id"`
	Object      string            `json:"object"`
	Created     int64             `json:"created"`
	OwnedBy     string            `json:"owned_by"`
	Root        string            `json:"root"`
	Parent      *string           `json:"parent"`
	MaxModelLen int               `json:"max_model_len"`
	Permission  []modelPermission `json:"permission"`
}

type modelPermission struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Created            int64   `json:"created"`
	AllowCreateEngine  bool    `json:"allow_create_engine"`
	AllowSampling      bool    `json:"allow_sampling"`
	AllowLogprobs      bool    `json:"allow_logprobs"`
	AllowSearchIndices bool    `json:"allow_search_indices"`
	AllowView          bool    `json:"allow_view"`
	AllowFineTuning    bool    `json:"allow_fine_tuning"`
	Organization       string  `json:"organization"`
	Group              *string `json:"group"`
	IsBlocking         bool    `json:"is_blocking"`
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	created := s.base.Unix()
	cards := make([]modelCard, 0, len(s.cfg.ServedModelNames))
	for i, name := range s.cfg.ServedModelNames {
		cards = append(cards, modelCard{
			ID: name, Object: "model", Created: created, OwnedBy: "vllm", Root: s.cfg.Model,
			MaxModelLen: s.cfg.Engine.MaxModelLen,
			Permission: []modelPermission{{
				ID: fmt.Sprintf("modelperm-%032x", mix.SplitMix64(s.cfg.Seed^uint64(i+1))), Object: "model_permission", Created: created,
				AllowSampling: true, AllowLogprobs: false, AllowView: true, Organization: "*",
			}},
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": cards})
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	dead := s.deadErr
	s.mu.Unlock()
	if dead != nil {
		writeAPIError(w, &apiError{Status: http.StatusInternalServerError, Type: "EngineDeadError", Message: dead.Error()}, s.cfg.ErrorStyle)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) version(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": s.cfg.Version})
}

func (s *Server) resetPrefixCache(w http.ResponseWriter, r *http.Request) {
	if _, e := readBody(w, r, s.cfg.MaxBodyBytes); e != nil {
		writeAPIError(w, e, s.cfg.ErrorStyle)
		return
	}
	ok, err := s.ResetPrefixCache(r.Context())
	if err != nil {
		writeAPIError(w, &apiError{Status: http.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: err.Error()}, s.cfg.ErrorStyle)
		return
	}
	if !ok {
		// vLLM logs this and still answers 200.
		s.log.Warn("Failed to reset prefix cache because some blocks are not freed yet")
	}
	w.WriteHeader(http.StatusOK)
}

type tokenizeRequest struct {
	Model            *string         `json:"model"`
	Prompt           *string         `json:"prompt"`
	Content          *string         `json:"content"` // llama.cpp's field, accepted too
	Messages         json.RawMessage `json:"messages"`
	AddSpecialTokens *bool           `json:"add_special_tokens"`
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeAPIError(w, e, s.cfg.ErrorStyle)
		return
	}
	if req.Model != nil && !s.servesModel(*req.Model) {
		writeAPIError(w, notFound(fmt.Sprintf("The model `%s` does not exist.", *req.Model)), s.cfg.ErrorStyle)
		return
	}
	var text string
	switch {
	case req.Prompt != nil:
		text = *req.Prompt
	case req.Content != nil:
		text = *req.Content
	case len(req.Messages) > 0:
		t, e := renderMessages(req.Messages)
		if e != nil {
			writeAPIError(w, e, s.cfg.ErrorStyle)
			return
		}
		text = t
	default:
		writeAPIError(w, badParam("prompt", "Field required: 'prompt' (or 'messages')."), s.cfg.ErrorStyle)
		return
	}
	// vLLM's /tokenize counts any length; this one stops where generation
	// does (promptTokenCap), so that a huge text costs no more here than a
	// prompt the server could ever accept.
	ids, err := tokenizer.EncodeLimit(r.Context(), s.tok, text, s.promptTokenCap())
	var tooLong *tokenizer.LimitError
	switch {
	case errors.As(err, &tooLong):
		writeAPIError(w, badParam("prompt", "The prompt needs at least %d tokens; /tokenize counts up to %d (twice this model's maximum context length of %d tokens).",
			tooLong.AtLeast, tooLong.Limit, s.cfg.Engine.MaxModelLen), s.cfg.ErrorStyle)
		return
	case err != nil:
		writeAPIError(w, badParam("prompt", "Could not tokenize the prompt: %v", err), s.cfg.ErrorStyle)
		return
	}
	if ids == nil {
		ids = []int{}
	}
	writeJSON(w, http.StatusOK, struct {
		Count       int   `json:"count"`
		MaxModelLen int   `json:"max_model_len"`
		Tokens      []int `json:"tokens"`
		TokenStrs   *any  `json:"token_strs"`
	}{len(ids), s.cfg.Engine.MaxModelLen, ids, nil})
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  *string `json:"model"`
		Tokens *[]int  `json:"tokens"`
	}
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeAPIError(w, e, s.cfg.ErrorStyle)
		return
	}
	if req.Model != nil && !s.servesModel(*req.Model) {
		writeAPIError(w, notFound(fmt.Sprintf("The model `%s` does not exist.", *req.Model)), s.cfg.ErrorStyle)
		return
	}
	if req.Tokens == nil {
		writeAPIError(w, badParam("tokens", "Field required: 'tokens' (an array of token IDs)."), s.cfg.ErrorStyle)
		return
	}
	if e := checkTokenIDs(*req.Tokens, s.tok.VocabSize()); e != nil {
		writeAPIError(w, e, s.cfg.ErrorStyle)
		return
	}
	text, err := s.tok.Decode(r.Context(), *req.Tokens)
	if err != nil {
		writeAPIError(w, badParam("tokens", "Could not detokenize: %v", err), s.cfg.ErrorStyle)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": text})
}

// promptVocab is how many IDs a token-ID prompt may use: the model's
// (Config.PromptVocab) where it is larger than the tokenizer's.
func (s *Server) promptVocab() int {
	return max(s.tok.VocabSize(), s.cfg.PromptVocab)
}

// checkTokenIDs rejects IDs outside a vocabulary of vocab IDs (0: any)
// with vLLM's V1 message. /detokenize needs IDs the tokenizer can turn
// into text; a prompt needs IDs of the model (promptVocab).
func checkTokenIDs(ids []int, vocab int) *apiError {
	for _, id := range ids {
		if id < 0 || id > math.MaxInt32 || (vocab > 0 && id >= vocab) {
			return badParam("prompt", "Token id %d is out of vocabulary", id)
		}
	}
	return nil
}
