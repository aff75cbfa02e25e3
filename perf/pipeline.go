package perf

import "time"

// StageModel is a step model that also knows how long a step holds the
// pipeline: with pipeline parallelism vLLM keeps one batch per stage in
// flight, so the next batch can start once the busiest stage (or the host,
// whichever is slower) has finished with the previous one, while each
// batch still takes StepTime from start to output.
type StageModel interface {
	StepModel
	// StageTime is how long a step of shape s keeps the pipeline from
	// taking another batch.
	StageTime(s StepShape) time.Duration
}

// StageTime is m's StageTime when m is a StageModel, and otherwise an even
// share of StepTime among the stages (a model that cannot split a step).
func StageTime(m StepModel, s StepShape, stages int) time.Duration {
	if sm, ok := m.(StageModel); ok {
		return sm.StageTime(s)
	}
	return m.StepTime(s) / time.Duration(max(stages, 1))
}

// StageSplit is a step on a pipeline. StepTime is the sum of (stages−1)
// sends, every stage and Host; with one stage Stage is the whole GPU time.
type StageSplit struct {
	// Stage is the GPU time of the busiest stage: its layers and their TP
	// all-reduces, the lm_head, logits gather and sampler on the last stage, and
	// kernel launch gaps when the step runs without CUDA graphs.
	Stage time.Duration
	// Send is one activation send (hidden states and residual, 2·T·d·2
	// bytes) from a stage to the next over the deployment's link.
	Send time.Duration
	// Host is the CPU work of the step (scheduling, input preparation,
	// output processing, swap copies), which overlaps other batches' stages.
	Host time.Duration
}

// StageSplit splits one step among the deployment's pipeline stages.
func (r *Roofline) StageSplit(s StepShape) StageSplit {
	p := r.seconds(s)
	host := p.overhead + p.swap
	if p.gpu == 0 {
		return StageSplit{Host: toDuration(host)}
	}
	w := r.work(s)
	commFixed, commPerToken := r.stageCommFixed, r.stageCommPerToken
	if r.stages == 1 {
		commFixed, commPerToken = r.commFixed, r.commPerToken
	}
	comm := commFixed + w.tokens*commPerToken + r.tpCommSeconds(w.tokens)/r.stages + r.inputBroadcast
	// Launch gaps idle the GPU between a stage's kernels, and graph gaps
	// between its graphs, so they belong to the stages, not to the host.
	gaps := (p.gaps + p.pieces) / r.stages
	inner := larger(w.layerCompute, w.layerMemory) + comm + gaps
	last := larger(w.layerCompute+w.headCompute, w.layerMemory+w.headMemory) + w.sampler + comm + gaps
	if w.sampled > 0 {
		last += r.gatherSeconds(w.sampled)
	}
	return StageSplit{
		Stage: toDuration(larger(inner, last)),
		Send:  toDuration(r.sendFixed + w.tokens*r.sendPerToken),
		Host:  toDuration(host),
	}
}

// StageTime implements StageModel: the busiest stage with its send, or
// the host work when that is longer.
func (r *Roofline) StageTime(s StepShape) time.Duration {
	sp := r.StageSplit(s)
	return max(sp.Stage+sp.Send, sp.Host)
}

// Pipeline times batches through pipeline stages on a driver's clock: a
// batch enters when it is ready and the pipeline can take it (the previous
// batch's stage time after that one entered), takes its step time to come
// out, and cannot overtake the batch ahead of it. The zero value is an
// empty pipeline.
type Pipeline struct {
	free, lastOut time.Duration
}

// Enter starts a batch that is ready at ready, takes latency from entry to
// output and holds the pipeline for stage; it returns when the batch's
// output is out.
func (p *Pipeline) Enter(ready, latency, stage time.Duration) time.Duration {
	start := max(ready, p.free)
	p.free = start + max(stage, 0)
	out := max(start+max(latency, 0), p.lastOut+max(stage, 0))
	p.lastOut = out
	return out
}
