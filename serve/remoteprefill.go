package serve

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/servebench/servebench/perf"
)

// kvTransferParams is the part of vLLM's kv_transfer_params (P/D
// disaggregation) that changes timing: do_remote_prefill marks a request
// sent to a decode instance after another instance prefilled it.
type kvTransferParams struct {
	DoRemotePrefill bool `json:"do_remote_prefill"`
}

// remotePrefillModel is a step model that times remote-prefill requests as
// llm-d-inference-sim does: the prompt's KV arrives after a transfer
// latency instead of being computed, and the request then decodes.
type remotePrefillModel interface {
	perf.StepModel
	// KVTransferTime is how long the request's KV takes to arrive, drawn
	// from the request's own seed so it does not depend on arrival order.
	KVTransferTime(requestSeed uint64) time.Duration
	// RemotePrefillStepTime times a step whose only finishing prefills are
	// remote ones: a decode step, since no prompt is computed.
	RemotePrefillStepTime(s perf.StepShape) time.Duration
}

// awaitKVTransfer holds a remote-prefill request for its KV transfer time
// before it reaches the scheduler. It reports false when the client went
// away meanwhile.
func (s *Server) awaitKVTransfer(ctx context.Context, st *stream) bool {
	m, ok := s.cfg.StepModel.(remotePrefillModel)
	if !ok || !st.remotePrefill {
		return true
	}
	d := m.KVTransferTime(st.textSeed)
	return d <= 0 || sleepCtx(ctx, d)
}

// stepTime asks the step model how long step shape s lasts. A step whose
// finishing prefills all belong to remote-prefill requests is a decode step
// for a model that knows them; one local prefill anywhere in the waiting or
// running set keeps the step a prefill step (the engine does not say which
// requests a step holds, so this errs towards the longer time).
func (d *driver) stepTime(s perf.StepShape) time.Duration {
	m, ok := d.s.cfg.StepModel.(remotePrefillModel)
	if !ok || s.PrefillsDone == 0 {
		return d.s.cfg.StepModel.StepTime(s)
	}
	for _, st := range d.streams {
		if st.generated == 0 && !st.remotePrefill {
			return m.StepTime(s)
		}
	}
	return m.RemotePrefillStepTime(s)
}

func (m *fixedLatencyModel) KVTransferTime(requestSeed uint64) time.Duration {
	rng := rand.New(rand.NewPCG(m.cfg.Seed^requestSeed, 0x6b762d78666572))
	return jitterWith(rng, m.cfg.KVCacheTransferLatency, m.cfg.KVCacheTransferLatencyStdDev)
}

func (m *fixedLatencyModel) RemotePrefillStepTime(s perf.StepShape) time.Duration {
	mean := time.Duration(float64(m.cfg.InterTokenLatency) * m.loadFactor(s.Prefills+s.Decodes))
	return m.jitter(mean, m.cfg.InterTokenLatencyStdDev)
}
