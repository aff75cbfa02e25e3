package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/serve"
)

// kvRoleFlags make `serve` one side of prefill/decode disaggregation.
type kvRoleFlags struct {
	fs           *pflag.FlagSet
	role         string
	peer         string
	port         int
	link         string
	hiddenStates bool
	waitTimeout  time.Duration
}

func (f *kvRoleFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.role, "kv-role", "", "prefill/decode disaggregation: producer (prefill: sends each prompt's KV over TCP) or consumer (decode: admits a request once its KV arrived); vLLM's kv_producer/kv_consumer are accepted")
	fs.StringVar(&f.peer, "kv-peer", "", "producer: the consumer's KV address HOST:PORT for requests that do not name one (servebench proxy --decode names it per request)")
	fs.IntVar(&f.port, "kv-port", 14579, "consumer: port on --host that takes KV transfers (vLLM's kv_port default; 0 picks a free one)")
	fs.StringVar(&f.link, "kv-link", "tcp", "producer: pace transfers like this KV link preset (as sim --kv-link) so loopback timings follow the sim's link model: "+strings.Join(perf.KVLinkNames(), ", ")+", or none (as fast as the socket takes)")
	fs.BoolVar(&f.hiddenStates, "kv-send-hidden-states", false, "also send the last layer's hidden states per token, as V0 connectors do (default: on for --engine v0, as in sim)")
	fs.DurationVar(&f.waitTimeout, "kv-wait-timeout", 30*time.Second, "consumer: how long a request waits for its KV before failing with 504; producer: the longest a transfer may take")
}

// kvBytesPerToken is what a connector sends per prompt token, the same
// figure `sim --topology pd` moves: V0 connectors add the hidden states.
func kvBytesPerToken(dep perf.Deployment, v engine.Version, hiddenSet bool, hidden bool) int64 {
	if !hiddenSet {
		hidden = v == engine.V0
	}
	return perf.KVTransferBytes(dep.Model, dep.KVCacheDType, 1, hidden)
}

// apply sets cfg.KVTransfer; the returned start runs the consumer's KV
// listener once the server is up (nil for a producer or no role).
func (f *kvRoleFlags) apply(cfg *serve.Config, dep perf.Deployment, host string) (func(context.Context, *serve.Running, *slog.Logger) error, error) {
	if f.role == "" {
		for _, name := range []string{"kv-peer", "kv-port", "kv-link", "kv-wait-timeout"} {
			if f.fs.Changed(name) {
				return nil, fmt.Errorf("--%s needs --kv-role producer or consumer", name)
			}
		}
		return nil, nil
	}
	role, err := serve.ParseKVRole(f.role)
	if err != nil {
		return nil, fmt.Errorf("--kv-role: %w", err)
	}
	if f.waitTimeout <= 0 {
		return nil, fmt.Errorf("--kv-wait-timeout %v: give a positive duration", f.waitTimeout)
	}
	kv := &serve.KVTransferConfig{
		Role:          role,
		BytesPerToken: kvBytesPerToken(dep, cfg.Engine.Version, f.fs.Changed("kv-send-hidden-states"), f.hiddenStates),
		Ranks:         max(dep.TensorParallel, 1),
		WaitTimeout:   f.waitTimeout,
	}
	cfg.KVTransfer = kv
	if role == serve.KVProducer {
		if f.peer != "" {
			if _, _, err := net.SplitHostPort(f.peer); err != nil {
				return nil, fmt.Errorf("--kv-peer %q: give HOST:PORT, e.g. 127.0.0.1:14579", f.peer)
			}
		}
		kv.Peer = f.peer
		if f.link != "none" {
			if kv.Link, err = perf.LookupKVLink(f.link); err != nil {
				return nil, fmt.Errorf("--kv-link: %w (or none)", err)
			}
		}
		return nil, nil
	}
	if f.port < 0 || f.port > 65535 {
		return nil, fmt.Errorf("--kv-port %d: give a port between 0 and 65535", f.port)
	}
	addr := net.JoinHostPort(host, strconv.Itoa(f.port))
	return func(ctx context.Context, running *serve.Running, log *slog.Logger) error {
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("--kv-port: listening on %s: %w (pick a free port, or 0 for any)", addr, err)
		}
		log.Info("servebench serve: kv_consumer taking KV transfers on " + ln.Addr().String())
		go func() {
			if err := running.ServeKV(ctx, ln); err != nil {
				log.Error(err.Error())
			}
		}()
		return nil
	}, nil
}
