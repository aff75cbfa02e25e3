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
	policy   string
	host     string
	port     int
}

func newProxyCmd() *cobra.Command {
	var f proxyFlags
	cmd := &cobra.Command{
		Use:   "proxy --backend URL --backend URL... [--policy rr|least-loaded]",
		Short: "Route requests over a co-located fleet of OpenAI-compatible servers (e.g. servebench serve replicas)",
		Long: `proxy is a router in front of several OpenAI-compatible servers: each request goes to one
backend, picked round-robin (rr) or by the fewest requests in flight (least-loaded), and its
response, SSE streams included, passes through chunk by chunk. The backend that served a request
is named in the X-Servebench-Backend response header. A backend that cannot be reached fails
the requests routed to it with HTTP 502 and an error naming it; the rest keep routing.

  servebench serve --port 8001 --seed 1 &
  servebench serve --port 8002 --seed 2 &
  servebench proxy --port 9000 --backend http://127.0.0.1:8001 --backend http://127.0.0.1:8002 --policy least-loaded &
  servebench bench --base-url http://127.0.0.1:9000 --num-prompts 300 --request-rate 20`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProxy(cmd, &f)
		},
	}
	fs := cmd.Flags()
	fs.StringSliceVar(&f.backends, "backend", nil, "backend base URL (repeat the flag or separate with commas)")
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
	if len(f.backends) == 0 {
		return errors.New("--backend: give at least one backend URL, e.g. --backend http://127.0.0.1:8001")
	}
	p, err := serve.NewProxy(f.backends, policy)
	if err != nil {
		return fmt.Errorf("--backend: %w", err)
	}
	defer p.Close()
	ctx := cmd.Context()
	var lc net.ListenConfig
	addr := net.JoinHostPort(f.host, strconv.Itoa(f.port))
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("--port: listening on %s: %w (pick a free port, or 0 for any)", addr, err)
	}
	hs := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	errw := cmd.ErrOrStderr()
	if !serve.IsLoopback(ln.Addr()) {
		fmt.Fprintf(errw, "Listening on %s: anyone who can reach this address can send requests through to the backends. Pass --host 127.0.0.1 to accept local connections only.\n", ln.Addr())
	}
	fmt.Fprintf(errw, "servebench proxy: %s over %d backends on http://%s\n", policy, len(f.backends), ln.Addr())
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
