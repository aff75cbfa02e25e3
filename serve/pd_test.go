package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/perf"
)

// testKVBytesPerToken is a small model's KV (Qwen2.5-0.5B: 24 layers, 2 KV
// heads of 64, fp16 = 12 KiB/token).
const testKVBytesPerToken = 12 << 10

type pdFleet struct {
	prefill, decode []*Running
	stopKV          []func()
	proxy           *httptest.Server
	pd              *PDProxy
}

// startPD runs nP producers and nD consumers on loopback, each consumer
// with its KV listener, behind a PDProxy; everything stops with the test.
func startPD(t *testing.T, nP, nD int, handoff PDHandoff, link perf.KVLink, cfgFn func(*Config)) *pdFleet {
	t.Helper()
	f := &pdFleet{}
	kv := KVTransferConfig{BytesPerToken: testKVBytesPerToken, Ranks: 1, Link: link, WaitTimeout: 10 * time.Second}
	newCfg := func(role KVRole) Config {
		cfg := testConfig(t)
		cfg.ShutdownGrace = 50 * time.Millisecond
		k := kv
		k.Role = role
		cfg.KVTransfer = &k
		if cfgFn != nil {
			cfgFn(&cfg)
		}
		return cfg
	}
	var decodeURLs, prefillURLs []string
	for range nD {
		r := startServer(t, newCfg(KVConsumer))
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		// The address must be known before the proxy asks for it.
		if err := r.ListenKV(ln); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.ServeKV(ctx, ln) }()
		var once sync.Once
		stop := func() {
			once.Do(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("ServeKV: %v", err)
				}
			})
		}
		t.Cleanup(stop)
		f.decode = append(f.decode, r)
		f.stopKV = append(f.stopKV, stop)
		decodeURLs = append(decodeURLs, r.URL())
	}
	for range nP {
		r := startServer(t, newCfg(KVProducer))
		f.prefill = append(f.prefill, r)
		prefillURLs = append(prefillURLs, r.URL())
	}
	pd, err := NewPDProxy(prefillURLs, decodeURLs, ProxyRoundRobin, handoff)
	if err != nil {
		t.Fatal(err)
	}
	f.pd = pd
	f.proxy = httptest.NewServer(pd)
	t.Cleanup(func() { f.proxy.Close(); pd.Close() })
	return f
}

type pdResult struct {
	status      int
	body        string
	sent        time.Time
	firstToken  time.Time
	end         time.Time
	tokens      int
	decodeURL   string
	transferErr error
}

// completeStream sends one streamed completion of prompt token IDs and
// times its chunks.
func completeStream(ctx context.Context, client *http.Client, url string, prompt []int, maxTokens int) pdResult {
	ids := make([]string, len(prompt))
	for i, id := range prompt {
		ids[i] = strconv.Itoa(id)
	}
	body := fmt.Sprintf(`{"model":"test-model","prompt":[%s],"max_tokens":%d,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, strings.Join(ids, ","), maxTokens)
	res := pdResult{sent: time.Now()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", strings.NewReader(body))
	if err != nil {
		res.transferErr = err
		return res
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		res.transferErr = err
		return res
	}
	defer resp.Body.Close()
	res.status = resp.StatusCode
	res.decodeURL = resp.Header.Get(BackendHeader)
	sc := bufio.NewScanner(resp.Body)
	var all strings.Builder
	for sc.Scan() {
		line := sc.Text()
		all.WriteString(line + "\n")
		if m := completionTokens.FindStringSubmatch(line); m != nil {
			res.tokens, _ = strconv.Atoi(m[1])
		}
		if !strings.HasPrefix(line, "data: {") || !strings.Contains(line, `"text"`) || strings.Contains(line, `"error"`) {
			continue
		}
		now := time.Now()
		if res.firstToken.IsZero() {
			res.firstToken = now
		}
		res.end = now
	}
	res.body = all.String()
	res.transferErr = sc.Err()
	return res
}

var completionTokens = regexp.MustCompile(`"completion_tokens":(\d+)`)

func testPrompt(i, n int) []int {
	p := make([]int, n)
	for k := range p {
		p[k] = 1000 + (i*7919+k*104729)%50000
	}
	return p
}

// waitTransfers polls until the server has recorded n transfers.
func waitTransfers(t *testing.T, r *Running, n int) []KVTransferRecord {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs := r.KVTransfers()
		if len(recs) >= n || time.Now().After(deadline) {
			return recs
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func metricValue(t *testing.T, url, name, direction string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(regexp.QuoteMeta(name) + `\{direction="` + direction + `"\} (\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no %s{direction=%q}", url, name, direction)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Every KV byte a producer sends is received, per request, and /metrics on
// both sides agree with the per-request records.
func TestPDKVBytesConserved(t *testing.T) {
	for _, handoff := range []PDHandoff{PDSequential, PDConcurrent} {
		t.Run(string(handoff), func(t *testing.T) {
			f := startPD(t, 2, 2, handoff, perf.KVLink{}, nil)
			const n = 16
			var wg sync.WaitGroup
			results := make([]pdResult, n)
			for i := range n {
				wg.Go(func() {
					results[i] = completeStream(context.Background(), http.DefaultClient, f.proxy.URL, testPrompt(i, 40+i*13), 4)
				})
			}
			wg.Wait()
			for i, r := range results {
				if r.status != http.StatusOK || r.tokens != 4 || r.transferErr != nil {
					t.Fatalf("request %d: status %d, %d tokens, %v\n%s", i, r.status, r.tokens, r.transferErr, r.body)
				}
			}
			sent := map[string]KVTransferRecord{}
			var sentTotal, recvTotal int64
			var sentSeconds, recvSeconds float64
			for _, p := range f.prefill {
				for _, rec := range waitTransfers(t, p, 1) {
					sent[rec.RequestID] = rec
				}
			}
			for _, p := range f.prefill {
				for _, rec := range p.KVTransfers() {
					sent[rec.RequestID] = rec
				}
			}
			received := 0
			for _, d := range f.decode {
				for _, rec := range d.KVTransfers() {
					received++
					s, ok := sent[rec.RequestID]
					want := int64(testKVBytesPerToken * rec.PromptTokens)
					if !ok || s.Err != nil || rec.Err != nil || s.Bytes != rec.Bytes || rec.Bytes != want || rec.PromptTokens < 40 {
						t.Errorf("request %s: sent %+v, received %+v, want %d bytes both ways", rec.RequestID, s, rec, want)
					}
					sentTotal += s.Bytes
					recvTotal += rec.Bytes
					sentSeconds += s.End.Sub(s.Start).Seconds()
					recvSeconds += rec.End.Sub(rec.Start).Seconds()
				}
			}
			if received != n || len(sent) != n {
				t.Fatalf("%d transfers sent, %d received, want %d each", len(sent), received, n)
			}
			var mSent, mRecv, mSentSeconds, mRecvSeconds float64
			for _, p := range f.prefill {
				mSent += metricValue(t, p.URL(), "servebench:kv_transfer_bytes_total", "sent")
				mSentSeconds += metricValue(t, p.URL(), "servebench:kv_transfer_seconds_total", "sent")
			}
			for _, d := range f.decode {
				mRecv += metricValue(t, d.URL(), "servebench:kv_transfer_bytes_total", "received")
				mRecvSeconds += metricValue(t, d.URL(), "servebench:kv_transfer_seconds_total", "received")
			}
			if math.Abs(mSentSeconds-sentSeconds) > 1e-6 || math.Abs(mRecvSeconds-recvSeconds) > 1e-6 || !(mSentSeconds > mRecvSeconds) {
				t.Errorf("seconds: records sent %g received %g, metrics sent %g received %g", sentSeconds, recvSeconds, mSentSeconds, mRecvSeconds)
			}
			if mSent != float64(sentTotal) || mRecv != float64(recvTotal) || sentTotal != recvTotal {
				t.Errorf("bytes: records sent %d received %d, metrics sent %.0f received %.0f", sentTotal, recvTotal, mSent, mRecv)
			}
			t.Logf("%s: %d transfers, %d bytes sent, %d received", handoff, n, sentTotal, recvTotal)
		})
	}
}

// The decode instance emits no token before the request's KV has arrived,
// even when the proxy hands it the request before the prefill ran
// (concurrent) and the link is slow.
func TestPDDecodeWaitsForKV(t *testing.T) {
	slow := perf.KVLink{Name: "slow", NICs: 1, NICBandwidth: 20 << 20, Setup: 80 * time.Millisecond}
	for _, handoff := range []PDHandoff{PDConcurrent, PDSequential} {
		t.Run(string(handoff), func(t *testing.T) {
			f := startPD(t, 1, 1, handoff, slow, nil)
			for i := range 3 {
				r := completeStream(context.Background(), http.DefaultClient, f.proxy.URL, testPrompt(i, 200), 3)
				if r.status != http.StatusOK || r.tokens != 3 {
					t.Fatalf("request %d: status %d, %d tokens\n%s", i, r.status, r.tokens, r.body)
				}
				recs := waitTransfers(t, f.decode[0], i+1)
				arrived := recs[i].End
				if r.firstToken.Before(arrived) {
					t.Errorf("request %d: first token %v before its KV arrived", i, arrived.Sub(r.firstToken))
				}
				// 200 tokens × 12 KiB at 20 MiB/s ≈ 117 ms plus 80 ms setup.
				if got := arrived.Sub(r.sent); got < 190*time.Millisecond {
					t.Errorf("request %d: KV arrived %v after sending, faster than the paced link allows", i, got)
				}
			}
		})
	}
}

// A decode instance killed mid-run fails the requests it holds with an
// error naming it, and the proxy routes the rest to the other one.
func TestPDDecodeKilledMidRun(t *testing.T) {
	f := startPD(t, 1, 2, PDSequential, perf.KVLink{}, func(c *Config) {
		c.StepModel = linearModel{fixed: 5 * time.Millisecond, perToken: 2 * time.Microsecond}
	})
	victim := f.decode[1].URL()
	// A long request on the victim (the second decode pick under rr).
	first := completeStream(context.Background(), http.DefaultClient, f.proxy.URL, testPrompt(0, 30), 2)
	if first.status != http.StatusOK {
		t.Fatalf("warm-up request: %d\n%s", first.status, first.body)
	}
	long := make(chan pdResult, 1)
	go func() {
		long <- completeStream(context.Background(), http.DefaultClient, f.proxy.URL, testPrompt(1, 30), 400)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, d := f.pd.InFlight(); d[1] == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let it stream a few tokens
	f.stopKV[1]()
	if err := f.decode[1].Close(); err != nil {
		t.Fatal(err)
	}
	lr := <-long
	if lr.decodeURL != victim || lr.tokens == 400 {
		t.Fatalf("the long request ran on %s with %d tokens; want it cut short on %s", lr.decodeURL, lr.tokens, victim)
	}
	if !strings.Contains(lr.body, "error") && lr.transferErr == nil {
		t.Errorf("the killed instance's request ended without an error:\n%s", lr.body)
	}
	failed, ok := 0, 0
	for i := range 12 {
		r := completeStream(context.Background(), http.DefaultClient, f.proxy.URL, testPrompt(10+i, 30), 3)
		switch {
		case r.status == http.StatusOK && r.tokens == 3:
			ok++
			if r.decodeURL == victim {
				t.Errorf("request %d was served by the killed instance", i)
			}
		case r.status == http.StatusBadGateway && strings.Contains(r.body, victim):
			failed++
		default:
			t.Errorf("request %d: status %d, %d tokens, %v: %s", i, r.status, r.tokens, r.transferErr, r.body)
		}
	}
	if failed > 1 || ok < 11 {
		t.Errorf("after the kill: %d failed, %d served; want at most one failure (the probe that ejects it)", failed, ok)
	}
}

func TestNewPDProxyErrors(t *testing.T) {
	for _, tc := range []struct {
		name            string
		prefill, decode []string
		handoff         PDHandoff
		want            string
	}{
		{"no prefill", nil, []string{"http://127.0.0.1:1"}, PDSequential, "prefill"},
		{"no decode", []string{"http://127.0.0.1:1"}, nil, PDSequential, "decode"},
		{"bad handoff", []string{"http://127.0.0.1:1"}, []string{"http://127.0.0.1:2"}, "eventually", "handoff"},
	} {
		_, err := NewPDProxy(tc.prefill, tc.decode, ProxyRoundRobin, tc.handoff)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
}

func TestPrefillRequestBody(t *testing.T) {
	got, err := prefillRequestBody([]byte(`{"prompt":"x","max_tokens":64,"stream":true,"stream_options":{"include_usage":true},"min_tokens":8}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"max_tokens":1,"prompt":"x","stream":false}`; string(got) != want {
		t.Errorf("prefill body %s, want %s", got, want)
	}
	if _, err := prefillRequestBody([]byte(`[1]`)); err == nil {
		t.Error("a JSON array was accepted as a request")
	}
	_ = errors.New
}

// A prefill instance that is down fails the request with an error naming
// it, in both handoffs; under concurrent the decode request, already
// waiting for KV, is cancelled rather than left to time out.
func TestPDPrefillDownFailsFast(t *testing.T) {
	for _, handoff := range []PDHandoff{PDSequential, PDConcurrent} {
		t.Run(string(handoff), func(t *testing.T) {
			f := startPD(t, 1, 1, handoff, perf.KVLink{}, nil)
			dead := f.prefill[0].URL()
			if err := f.prefill[0].Close(); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			r := completeStream(context.Background(), http.DefaultClient, f.proxy.URL, testPrompt(1, 30), 3)
			if r.status != http.StatusBadGateway || !strings.Contains(r.body, "prefill backend "+dead) {
				t.Errorf("status %d, body %s; want 502 naming prefill backend %s", r.status, r.body, dead)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the failure took %v: the decode request waited for KV that could not come", took)
			}
		})
	}
}

// A consumer reports its KV address from the moment ListenKV returns, not
// once ServeKV's goroutine has run: the proxy may ask straight away.
func TestListenKVSetsTheAddressAtOnce(t *testing.T) {
	kv := KVTransferConfig{BytesPerToken: testKVBytesPerToken, Ranks: 1, WaitTimeout: time.Second}
	for _, tc := range []struct {
		role    KVRole
		wantErr bool
	}{{KVConsumer, false}, {KVProducer, true}} {
		t.Run(string(tc.role), func(t *testing.T) {
			cfg := testConfig(t)
			k := kv
			k.Role = tc.role
			cfg.KVTransfer = &k
			r := startServer(t, cfg)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			err = r.ListenKV(ln)
			if tc.wantErr {
				if err == nil {
					t.Fatal("a producer took a KV listener")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.Get(r.URL() + "/kv_transfer")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var info kvInfo
			if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
				t.Fatal(err)
			}
			if info.Role != KVConsumer || info.Address != ln.Addr().String() {
				t.Errorf("GET /kv_transfer = %+v, want role %s at %s", info, KVConsumer, ln.Addr())
			}
		})
	}
}
