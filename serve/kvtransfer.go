package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/internal/clock"
	"github.com/servebench/servebench/perf"
)

// KVRole is a server's side of prefill/decode disaggregation, named as
// vLLM's kv_transfer_config kv_role.
type KVRole string

const (
	// KVProducer is a prefill instance: after it computes a prompt it
	// sends the prompt's KV to a consumer over TCP.
	KVProducer KVRole = "kv_producer"
	// KVConsumer is a decode instance: it listens for KV and admits a
	// request only once its KV has arrived, with the prompt computed.
	KVConsumer KVRole = "kv_consumer"
)

// ParseKVRole accepts vLLM's names and the short producer / consumer.
func ParseKVRole(s string) (KVRole, error) {
	switch s {
	case "producer", string(KVProducer):
		return KVProducer, nil
	case "consumer", string(KVConsumer):
		return KVConsumer, nil
	}
	return "", fmt.Errorf("KV role %q: use producer (prefill) or consumer (decode)", s)
}

// The headers a P/D proxy sets (see PDProxy):
const (
	// KVRequestHeader names a request's KV on both instances: the producer
	// frames its KV with it, the consumer waits for KV under it.
	KVRequestHeader = "X-Servebench-KV-Request"
	// KVPeerHeader, on the producer's request, is the consumer's KV
	// address to send to (overriding KVTransferConfig.Peer).
	KVPeerHeader = "X-Servebench-KV-Peer"
	// KVSourceHeader, on the consumer's request, names the prefill
	// instance that holds the KV, for the error when it never arrives.
	KVSourceHeader = "X-Servebench-KV-Source"
)

// KVTransferConfig makes a server one side of P/D disaggregation.
type KVTransferConfig struct {
	Role KVRole
	// Peer is the producer's default consumer KV address (host:port), used
	// when a request carries no KVPeerHeader.
	Peer string
	// BytesPerToken is what the connector sends per prompt token for the
	// whole model (perf.KVTransferBytes of one token, hidden states
	// included for V0 connectors), as sim.KVTransfer.BytesPerToken.
	BytesPerToken int64
	// Ranks is the number of tensor-parallel streams; one connection
	// carries one rank's share, BytesPerToken×prompt/Ranks, as the sim's
	// link model times one rank.
	Ranks int
	// Link, when its bandwidth is set, paces the producer: each transfer
	// waits out Link.Setup (the dial counts towards it) and the producer's
	// transfers share Link.Bandwidth, so loopback timings follow the
	// sim's link model. A zero Link sends as fast as the socket takes.
	Link perf.KVLink
	// WaitTimeout bounds how long a consumer request waits for its KV
	// (and a producer's transfer may take); 0 → 30 s.
	WaitTimeout time.Duration
}

const defaultKVWait = 30 * time.Second

// KVTransferRecord is one request's transfer as one side saw it.
type KVTransferRecord struct {
	RequestID    string
	PromptTokens int
	Bytes        int64 // sent (producer, acknowledged) or received (consumer)
	Start, End   time.Time
	Err          error
}

// kvSide is a server's KV-transfer state.
type kvSide struct {
	cfg     KVTransferConfig
	bytes   *prometheus.CounterVec
	count   *prometheus.CounterVec
	seconds *prometheus.CounterVec
	linkMu  sync.Mutex
	linkAt  time.Time // when the producer's link is next free
	poolMu  sync.Mutex
	idle    map[string][]net.Conn // a producer's idle connections per consumer
	closed  bool
	mu      sync.Mutex
	arrived map[string]*kvArrival
	records []KVTransferRecord
	addr    string // a consumer's KV listener
}

type kvArrival struct {
	done chan struct{}
	rec  KVTransferRecord
}

func newKVSide(cfg KVTransferConfig, reg *prometheus.Registry) (*kvSide, error) {
	if cfg.Role != KVProducer && cfg.Role != KVConsumer {
		return nil, fmt.Errorf("serve: KV role %q: use %q or %q", cfg.Role, KVProducer, KVConsumer)
	}
	if cfg.BytesPerToken <= 0 {
		return nil, fmt.Errorf("serve: KV bytes per token %d: give the model's (perf.KVTransferBytes of one token)", cfg.BytesPerToken)
	}
	cfg.Ranks = max(cfg.Ranks, 1)
	if cfg.WaitTimeout <= 0 {
		cfg.WaitTimeout = defaultKVWait
	}
	k := &kvSide{cfg: cfg, arrived: map[string]*kvArrival{}, idle: map[string][]net.Conn{}}
	k.bytes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "servebench:kv_transfer_bytes_total",
		Help: "KV-cache bytes moved between prefill and decode instances (one tensor-parallel rank's share), by direction."}, []string{"direction"})
	k.count = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "servebench:kv_transfers_total",
		Help: "KV transfers between prefill and decode instances, by direction and outcome."}, []string{"direction", "outcome"})
	// With the byte and transfer counts, the mean transfer time gives the
	// link's achieved rate, the figure sim's --kv-link-bandwidth takes.
	k.seconds = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "servebench:kv_transfer_seconds_total",
		Help: "Time KV transfers took, by direction: sent from the prompt computed to the consumer's acknowledgement (link setup included), received from the frame header to the last byte."}, []string{"direction"})
	reg.MustRegister(k.bytes, k.count, k.seconds)
	return k, nil
}

func (k *kvSide) perRankBytes(promptTokens int) int64 {
	return k.cfg.BytesPerToken * int64(promptTokens) / int64(k.cfg.Ranks)
}

func (k *kvSide) note(direction string, rec KVTransferRecord) {
	outcome := "ok"
	if rec.Err != nil {
		outcome = "error"
	}
	k.bytes.WithLabelValues(direction).Add(float64(rec.Bytes))
	k.count.WithLabelValues(direction, outcome).Inc()
	k.seconds.WithLabelValues(direction).Add(rec.End.Sub(rec.Start).Seconds())
	k.mu.Lock()
	k.records = append(k.records, rec)
	k.mu.Unlock()
}

// KVTransfers lists the server's finished transfers (sent by a producer,
// received by a consumer), in completion order.
func (s *Server) KVTransfers() []KVTransferRecord {
	if s.kv == nil {
		return nil
	}
	s.kv.mu.Lock()
	defer s.kv.mu.Unlock()
	return append([]KVTransferRecord(nil), s.kv.records...)
}

// --- producer ---------------------------------------------------------------

// sendKVWhenComputed makes a producer start a request's KV transfer when
// the step that computed its prompt is due, as vLLM's connectors save the
// KV at the end of the forward pass and the sim starts the transfer at
// PrefillDone. Started after the response was written instead, each
// transfer began 0.1–0.3 ms later (the write, the handler's return and a
// goroutine start on a loaded host), all of it on the TTFT path. The
// response does not wait for the transfer: the proxy hands the request to
// the decode instance meanwhile.
func (s *Server) sendKVWhenComputed(r *http.Request, st *stream) {
	k := s.kv
	id := r.Header.Get(KVRequestHeader)
	if k == nil || k.cfg.Role != KVProducer || id == "" {
		return
	}
	promptTokens := st.req.PromptLen
	peer := r.Header.Get(KVPeerHeader)
	if peer == "" {
		peer = k.cfg.Peer
	}
	st.computed = func() {
		computedAt := time.Now()
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), k.cfg.WaitTimeout)
			defer cancel()
			rec := k.send(ctx, peer, id, promptTokens, computedAt)
			if rec.Err != nil {
				s.log.Warn(rec.Err.Error())
			}
			k.note("sent", rec)
		}()
	}
}

// kvPaceSlack is how far the sender may run ahead of the link's timeline.
const kvPaceSlack = 200 * time.Microsecond

// kvChunk is the unit of pacing and of each socket write.
const kvChunk = 256 << 10

var kvPattern = func() []byte {
	b := make([]byte, kvChunk)
	for i := range b {
		b[i] = byte(i*31 + 7)
	}
	return b
}()

// send moves one request's KV to peer. The transfer counts from start
// (when the prompt was computed): the goroutine's start and the dial are
// part of the link's setup time, as the sim's transfer starts at
// PrefillDone.
func (k *kvSide) send(ctx context.Context, peer, id string, promptTokens int, start time.Time) KVTransferRecord {
	rec := KVTransferRecord{RequestID: id, PromptTokens: promptTokens, Start: start}
	fail := func(err error) KVTransferRecord {
		rec.End, rec.Err = time.Now(), fmt.Errorf("KV transfer of %s to %s: %w", id, peer, err)
		return rec
	}
	if peer == "" {
		return fail(errors.New("no consumer address: start the producer with --kv-peer or route through servebench proxy --prefill/--decode"))
	}
	payload := k.perRankBytes(promptTokens)
	hdr, err := kvFrameHeader{RequestID: id, PromptTokens: promptTokens, PayloadBytes: payload}.append(nil)
	if err != nil {
		return fail(err)
	}
	conn, reused, err := k.conn(ctx, peer)
	if err != nil {
		return fail(err)
	}
	// Runtime timers fire up to a millisecond late, as much as the tcp
	// preset's whole byte phase for a few MiB: the precise sleeper keeps
	// loopback timings on the link model.
	sleeper := clock.NewSleeper(false)
	defer sleeper.Stop()
	setupEnd := rec.Start.Add(k.cfg.Link.Setup)
	if !sleeper.Until(ctx, func() time.Duration { return time.Until(setupEnd) }) {
		_ = conn.Close()
		return fail(ctx.Err())
	}
	got, reusable, err := k.sendFrame(ctx, sleeper, conn, hdr, payload)
	if err != nil && reused && ctx.Err() == nil {
		// The consumer may have closed an idle connection (it restarted):
		// the frame goes again on a fresh one.
		var d net.Dialer
		if conn, err = d.DialContext(ctx, "tcp", peer); err == nil {
			got, reusable, err = k.sendFrame(ctx, sleeper, conn, hdr, payload)
		}
	}
	if err != nil {
		return fail(err)
	}
	if reusable {
		k.putConn(peer, conn)
	}
	rec.Bytes = got
	rec.End = time.Now()
	if got != payload {
		rec.Err = fmt.Errorf("KV transfer of %s to %s: the consumer acknowledged %d of %d bytes", id, peer, got, payload)
	}
	return rec
}

// sendFrame sends one transfer on conn, paced by the link, and returns
// the consumer's acknowledged byte count and whether conn can carry the
// next transfer; it closes conn otherwise.
func (k *kvSide) sendFrame(ctx context.Context, sleeper *clock.Sleeper, conn net.Conn, hdr []byte, payload int64) (got int64, reusable bool, err error) {
	defer func() {
		if !reusable {
			_ = conn.Close()
		}
	}()
	if dl, has := ctx.Deadline(); has {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	w := bufio.NewWriterSize(conn, kvChunk)
	if _, err := w.Write(hdr); err != nil {
		return 0, false, err
	}
	for left := payload; left > 0; {
		n := min(left, kvChunk)
		// Bytes go out as soon as the link's timeline allows; a wait too
		// short to sleep accurately is left to accumulate.
		if due := k.reserveLink(n); due > kvPaceSlack {
			at := time.Now().Add(due)
			if !sleeper.Until(ctx, func() time.Duration { return time.Until(at) }) {
				return 0, false, ctx.Err()
			}
		}
		if _, err := w.Write(kvPattern[:n]); err != nil {
			return 0, false, err
		}
		left -= n
	}
	if err := w.Flush(); err != nil {
		return 0, false, err
	}
	if got, err = readKVAck(conn); err != nil {
		return 0, false, err
	}
	// A connection whose context fired may hold a past deadline.
	return got, stop() && conn.SetDeadline(time.Time{}) == nil, nil
}

// kvIdleConns bounds the idle connections a producer keeps per consumer.
const kvIdleConns = 16

// conn is an idle connection to peer, or a new one. Connections are kept
// between transfers, as vLLM's connectors keep theirs: a dial per transfer
// cost 0.2 ms (median on a loaded loopback host), hidden in the tcp
// preset's setup but on every request's path with a zero Link.
func (k *kvSide) conn(ctx context.Context, peer string) (c net.Conn, reused bool, err error) {
	k.poolMu.Lock()
	if idle := k.idle[peer]; len(idle) > 0 {
		c = idle[len(idle)-1]
		k.idle[peer] = idle[:len(idle)-1]
	}
	k.poolMu.Unlock()
	if c != nil {
		return c, true, nil
	}
	var d net.Dialer
	c, err = d.DialContext(ctx, "tcp", peer)
	return c, false, err
}

func (k *kvSide) putConn(peer string, c net.Conn) {
	k.poolMu.Lock()
	if !k.closed && len(k.idle[peer]) < kvIdleConns {
		k.idle[peer] = append(k.idle[peer], c)
		c = nil
	}
	k.poolMu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

// closeIdle closes the producer's idle connections and keeps no more.
func (k *kvSide) closeIdle() {
	k.poolMu.Lock()
	idle := k.idle
	k.idle, k.closed = nil, true
	k.poolMu.Unlock()
	for _, conns := range idle {
		for _, c := range conns {
			_ = c.Close()
		}
	}
}

// reserveLink books n bytes on the producer's link and returns how long to
// wait until they have passed: concurrent transfers queue on one timeline,
// so they share the bandwidth as the sim's link does.
func (k *kvSide) reserveLink(n int64) time.Duration {
	bw := k.cfg.Link.Bandwidth()
	if !(bw > 0) {
		return 0
	}
	k.linkMu.Lock()
	defer k.linkMu.Unlock()
	now := time.Now()
	start := k.linkAt
	if start.Before(now) {
		start = now
	}
	k.linkAt = start.Add(time.Duration(float64(n) / bw * float64(time.Second)))
	return time.Until(k.linkAt)
}

// --- consumer ---------------------------------------------------------------

// ListenKV makes ln the consumer's KV address, the one GET /kv_transfer
// reports to the proxy. ServeKV does it too; a caller that runs ServeKV
// in a goroutine calls ListenKV first, so that a proxy asking at once is
// not told an empty address.
func (s *Server) ListenKV(ln net.Listener) error {
	if s.kv == nil || s.kv.cfg.Role != KVConsumer {
		return errors.New("serve: ServeKV needs a server with KV role kv_consumer")
	}
	s.kv.mu.Lock()
	s.kv.addr = ln.Addr().String()
	s.kv.mu.Unlock()
	return nil
}

// ServeKV accepts KV transfers on ln until ctx ends (a consumer's KV
// port). It closes ln when it returns.
func (s *Server) ServeKV(ctx context.Context, ln net.Listener) error {
	if err := s.ListenKV(ln); err != nil {
		_ = ln.Close()
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("serve: accepting KV transfers: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.kv.receive(ctx, conn)
		}()
	}
}

func (k *kvSide) receive(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	r := bufio.NewReaderSize(conn, kvChunk)
	// A producer keeps its connection for the next transfer: frames follow
	// one another until it closes.
	for ctx.Err() == nil {
		_ = conn.SetReadDeadline(time.Time{})
		h, err := readKVFrameHeader(r)
		if err != nil {
			return // closed, or not a transfer: nothing to account for
		}
		_ = conn.SetDeadline(time.Now().Add(k.cfg.WaitTimeout))
		rec := KVTransferRecord{RequestID: h.RequestID, PromptTokens: h.PromptTokens, Start: time.Now()}
		rec.Bytes, err = io.CopyN(io.Discard, r, h.PayloadBytes)
		rec.End = time.Now()
		if err == nil {
			_, err = conn.Write(appendKVAck(nil, rec.Bytes))
		}
		if err != nil {
			rec.Err = fmt.Errorf("receiving the KV of %s: %w", h.RequestID, err)
		}
		k.note("received", rec)
		k.deliver(rec)
		if err != nil {
			return
		}
	}
}

func (k *kvSide) slot(id string) *kvArrival {
	k.mu.Lock()
	defer k.mu.Unlock()
	a := k.arrived[id]
	if a == nil {
		a = &kvArrival{done: make(chan struct{})}
		k.arrived[id] = a
	}
	return a
}

func (k *kvSide) deliver(rec KVTransferRecord) {
	a := k.slot(rec.RequestID)
	a.rec = rec
	close(a.done)
	// KV nobody asks for (the decode request never came) is dropped.
	time.AfterFunc(2*k.cfg.WaitTimeout, func() { k.forget(rec.RequestID, a) })
}

func (k *kvSide) forget(id string, a *kvArrival) {
	k.mu.Lock()
	if k.arrived[id] == a {
		delete(k.arrived, id)
	}
	k.mu.Unlock()
}

// awaitKV holds a consumer's request until its KV has arrived and marks its
// prompt computed; no token can be produced before. A request without
// KVRequestHeader is served as a co-located one.
func (s *Server) awaitKV(r *http.Request, req *engine.Request) *apiError {
	k := s.kv
	id := r.Header.Get(KVRequestHeader)
	if k == nil || k.cfg.Role != KVConsumer || id == "" {
		return nil
	}
	source := r.Header.Get(KVSourceHeader)
	if source == "" {
		source = "the prefill instance"
	}
	a := k.slot(id)
	timer := time.NewTimer(k.cfg.WaitTimeout)
	defer timer.Stop()
	select {
	case <-a.done:
	case <-timer.C:
		k.forget(id, a)
		return &apiError{Status: http.StatusGatewayTimeout, Type: "KVTransferError",
			Message: fmt.Sprintf("the KV of request %s did not arrive from %s within %v; check that it runs with --kv-role producer and can reach this instance's KV port", id, source, k.cfg.WaitTimeout)}
	case <-r.Context().Done():
		k.forget(id, a)
		return &apiError{Status: 499, Type: "KVTransferError", Message: "client went away while waiting for KV"}
	}
	k.forget(id, a)
	if a.rec.Err != nil {
		return &apiError{Status: http.StatusBadGateway, Type: "KVTransferError",
			Message: fmt.Sprintf("the KV of request %s from %s failed: %v", id, source, a.rec.Err)}
	}
	// vLLM's kv_load_failure_policy=recompute: KV for another prompt
	// length is not this request's, so the prompt is computed here.
	if a.rec.PromptTokens == req.PromptLen {
		req.RemotePromptTokens = req.PromptLen
	}
	return nil
}

// kvInfo answers GET /kv_transfer: the role, and on a consumer the
// address producers send KV to (how PDProxy finds it).
type kvInfo struct {
	Role    KVRole `json:"kv_role"`
	Address string `json:"kv_address,omitempty"`
}

func (s *Server) kvTransferInfo(w http.ResponseWriter, _ *http.Request) {
	if s.kv == nil {
		writeDetail(w, http.StatusNotFound, "this server was started without --kv-role")
		return
	}
	s.kv.mu.Lock()
	info := kvInfo{Role: s.kv.cfg.Role, Address: s.kv.addr}
	s.kv.mu.Unlock()
	writeJSON(w, http.StatusOK, info)
}
