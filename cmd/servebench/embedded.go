package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/serve"
	"github.com/servebench/servebench/tokenizer"
)

// Defaults of the embedded target: a small model on a fast GPU, so that
// vLLM's default workload (1000 prompts, 1024 in / 128 out) finishes well
// within a minute of wall-clock time.
const (
	defaultEmbeddedModel = "Qwen/Qwen2-0.5B"
	defaultEmbeddedGPU   = "H100"
)

type embeddedTarget struct {
	url   string
	model string
	stop  func()
}

// startEmbeddedTarget starts `servebench serve` in-process on a free
// loopback port and says so in one line.
func startEmbeddedTarget(ctx context.Context, errw io.Writer, model, gpu string) (*embeddedTarget, error) {
	var ef engineFlags
	fs := pflag.NewFlagSet("embedded", pflag.ContinueOnError)
	ef.register(fs)
	if err := fs.Parse([]string{"--model", model, "--gpu", gpu}); err != nil {
		return nil, err
	}
	dep, _, ec, stepModel, err := ef.build()
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.New(ctx, serve.DefaultTokenizer, tokenizer.Options{})
	if err != nil {
		return nil, err
	}
	running, err := serve.Start(ctx, serve.Config{
		Engine: ec, StepModel: stepModel, Model: model, Tokenizer: tok,
		Logger: slog.New(slog.DiscardHandler),
	}, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(errw, "No server answered at %s: benchmarking the built-in emulated vLLM server at %s (model %s, GPU %s, engine %s); pass --base-url http://HOST:PORT to benchmark a real server.\n",
		defaultTargetAddr, running.URL(), dep.Model.Name, dep.GPU.Name, ec.Version)
	return &embeddedTarget{url: running.URL(), model: model, stop: func() { _ = running.Close() }}, nil
}

// defaultTargetAddr is where bench looks for a server when no --base-url,
// --host or --port is given: vLLM's default. Tests point it elsewhere so
// they never depend on what listens on the machine's port 8000.
var defaultTargetAddr = "127.0.0.1:8000"

// targetProbeTimeout bounds the look for a server at defaultTargetAddr, so
// a fresh machine falls back to the emulator at once.
const targetProbeTimeout = time.Second

// serverAnswers reports whether an HTTP server answers GET /v1/models at
// addr (any status: an auth error still means a server is there).
func serverAnswers(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, targetProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v1/models", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return true
}
