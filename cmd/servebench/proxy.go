package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/serve"
)

func init() { extraCommands = append(extraCommands, newProxyCmd) }

type proxyFlags struct {
	backends []string
	prefill  []string
	decode   []string
	handoff  string
	policy   string
	host     string
	port     int
}

func newProxyCmd() *cobra.Command {
	var f proxyFlags
	cmd := &cobra.Command{
		Use:   "proxy (--backend URL... | --prefill URL... --decode URL... [--handoff sequential|concurrent]) [--policy rr|least-loaded]",
		Short: "Route requests over a co-located fleet, or a prefill/decode disaggregated one, of servebench serve instances",
		Long: `proxy is a router in front of several OpenAI-compatible servers: each request goes to one
backend, picked round-robin (rr) or by the fewest requests in flight (least-loaded), and its
response, SSE streams included, passes through chunk by chunk. The backend that served a request
is named in the X-Servebench-Backend response header. A backend that cannot be reached fails
the requests routed to it with HTTP 502 and an error naming it; the rest keep routing.

  servebench serve --port 8001 --seed 1 &
  servebench serve --port 8002 --seed 2 &
  servebench proxy --port 9000 --backend http://127.0.0.1:8001 --backend http://127.0.0.1:8002 --policy least-loaded &
  servebench bench --base-url http://127.0.0.1:9000 --num-prompts 300 --request-rate 20

With --prefill and --decode it fronts prefill/decode disaggregation (serve --kv-role producer and
consumer): each completion goes to a prefill instance with max_tokens=1 and stream=false, then
(--handoff sequential, vLLM's disagg proxy) or at the same time (concurrent, P2pNccl's proxy) whole
to a decode instance, which waits for the KV the prefill instance sends it over TCP. The proxy
learns each decode instance's KV address from its GET /kv_transfer and names the transfer in the
X-Servebench-KV-Request header on both requests; X-Servebench-KV-Peer tells the prefill instance
where to send, X-Servebench-KV-Source tells the decode instance who sends. Responses name the
instances in X-Servebench-Prefill-Backend and X-Servebench-Backend.

  servebench serve --port 8100 --kv-role producer &
  servebench serve --port 8200 --kv-role consumer --kv-port 14579 &
  servebench proxy --port 9000 --prefill http://127.0.0.1:8100 --decode http://127.0.0.1:8200 &`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProxy(cmd, &f)
		},
	}
	fs := cmd.Flags()
	fs.StringSliceVar(&f.backends, "backend", nil, "backend base URL (repeat the flag or separate with commas)")
	fs.StringSliceVar(&f.prefill, "prefill", nil, "P/D: prefill instance base URL (serve --kv-role producer; repeat or separate with commas)")
	fs.StringSliceVar(&f.decode, "decode", nil, "P/D: decode instance base URL (serve --kv-role consumer; repeat or separate with commas)")
	fs.StringVar(&f.handoff, "handoff", string(serve.PDSequential), "P/D: sequential (decode is sent once the prefill returned) or concurrent (both at once; decode waits for the KV)")
	fs.StringVar(&f.policy, "policy", string(serve.ProxyRoundRobin), "routing policy: rr or least-loaded")
	fs.StringVar(&f.host, "host", "127.0.0.1", "host name to listen on")
	fs.IntVar(&f.port, "port", 9000, "port to listen on (0 picks a free one)")
	return cmd
}

func runProxy(cmd *cobra.Command, f *proxyFlags) error {
	if f.port < 0 || f.port > 65535 {
		return fmt.Errorf("--port %d: give a port between 0 and 65535", f.port)
	}
	policy := serve.ProxyPolicy(f.policy)
	if policy != serve.ProxyRoundRobin && policy != serve.ProxyLeastLoaded {
		return fmt.Errorf("--policy %q: use rr or least-loaded", f.policy)
	}
	handler, describe, closeProxy, err := buildProxy(f, policy)
	if err != nil {
		return err
	}
	defer closeProxy()
	ctx := cmd.Context()
	var lc net.ListenConfig
	addr := net.JoinHostPort(f.host, strconv.Itoa(f.port))
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("--port: listening on %s: %w (pick a free port, or 0 for any)", addr, err)
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	errw := cmd.ErrOrStderr()
	if !serve.IsLoopback(ln.Addr()) {
		fmt.Fprintf(errw, "Listening on %s: anyone who can reach this address can send requests through to the backends. Pass --host 127.0.0.1 to accept local connections only.\n", ln.Addr())
	}
	fmt.Fprintf(errw, "servebench proxy: %s on http://%s\n", describe, ln.Addr())
	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("proxy: %w", err)
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil {
		_ = hs.Close()
	}
	return nil
}

// buildProxy is the co-located or the P/D proxy the flags ask for.
func buildProxy(f *proxyFlags, policy serve.ProxyPolicy) (http.Handler, string, func(), error) {
	pd := len(f.prefill) > 0 || len(f.decode) > 0
	switch {
	case pd && len(f.backends) > 0:
		return nil, "", nil, errors.New("--backend fronts a co-located fleet, --prefill/--decode a disaggregated one: give one or the other")
	case pd && (len(f.prefill) == 0 || len(f.decode) == 0):
		return nil, "", nil, errors.New("--prefill and --decode: give at least one URL of each, e.g. --prefill http://127.0.0.1:8100 --decode http://127.0.0.1:8200")
	case pd:
		handoff := serve.PDHandoff(f.handoff)
		if handoff != serve.PDSequential && handoff != serve.PDConcurrent {
			return nil, "", nil, fmt.Errorf("--handoff %q: use sequential or concurrent", f.handoff)
		}
		p, err := serve.NewPDProxy(f.prefill, f.decode, policy, handoff)
		if err != nil {
			return nil, "", nil, fmt.Errorf("--prefill/--decode: %w", err)
		}
		return p, fmt.Sprintf("P/D %dP%dD, %s, %s handoff", len(f.prefill), len(f.decode), policy, handoff), p.Close, nil
	case len(f.backends) == 0:
		return nil, "", nil, errors.New("--backend: give at least one backend URL, e.g. --backend http://127.0.0.1:8001 (or --prefill/--decode for P/D)")
	}
	p, err := serve.NewProxy(f.backends, policy)
	if err != nil {
		return nil, "", nil, fmt.Errorf("--backend: %w", err)
	}
	return p, fmt.Sprintf("%s over %d backends", policy, len(f.backends)), p.Close, nil
}
