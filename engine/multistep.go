package engine

import "github.com/servebench/servebench/perf"

// MultiStepGroup follows V0's multi-step scheduling (--num-scheduler-steps,
// vLLM 0.6): a decode step opens a group of Steps steps, which run without
// the scheduler (the driver holds admissions, Engine.HoldAdmissions, while
// the group is open), and a prefill step is a group of its own. It keeps
// the outputs of the group's steps that have not reached the client yet:
// vLLM creates a request's output at the group's last step, or earlier
// for a request that finished inside the group. It knows no time: sim's
// runner and serve's driver both time the steps and say when outputs go
// out, and share this bookkeeping.
type MultiStepGroup struct {
	// Steps is the group size; 1 or less runs no groups.
	Steps int
	left  int
	held  []Output
	// finished is scratch for ReleaseFinished.
	finished map[uint64]struct{}
}

// Place places a step just scheduled in its group: cont, it continues
// the open group (its tokens join the group's chunk); open, the group has
// steps left after it.
func (g *MultiStepGroup) Place(s perf.StepShape) (cont, open bool) {
	switch {
	case g.left > 0:
		g.left--
		cont = true
	case s.Prefills == 0:
		g.left = g.Steps - 1
	}
	return cont, g.left > 0
}

// Grouping reports whether steps run in groups (Steps above 1).
func (g *MultiStepGroup) Grouping() bool { return g.Steps > 1 }

// Open reports whether the group has steps left to schedule: nothing
// joins the batch until it ends.
func (g *MultiStepGroup) Open() bool { return g.left > 0 }

// End ends the group before its last step (every request in it finished).
func (g *MultiStepGroup) End() { g.left = 0 }

// Hold keeps a step's outputs until Release or ReleaseFinished.
func (g *MultiStepGroup) Hold(outs []Output) { g.held = append(g.held, outs...) }

// Release returns every held output, in order, and holds nothing after.
// The slice is valid until the next Hold.
func (g *MultiStepGroup) Release() []Output {
	out := g.held
	g.held = g.held[:0]
	return out
}

// HandOnLagged holds the outputs of a step processed inside the next one
// (V0's async output processing) and returns what goes out then: every
// held output when the processed step ended its group or every step is
// streamed (--multi-step-stream-outputs); else, when the steps were
// pythonised early (the processing step is host-bound, or the group's
// last), the held outputs of the requests that finished; else nothing.
// handOn says whether outputs were handed on (possibly none, when every
// held output went out before).
func (g *MultiStepGroup) HandOnLagged(lagged []Output, groupEnd, stream, pythonised bool) (out []Output, handOn bool) {
	g.Hold(lagged)
	switch {
	case groupEnd || stream:
		return g.Release(), true
	case pythonised:
		out = g.ReleaseFinished()
		return out, out != nil
	}
	return nil, false
}

// ReleaseFinished returns, in order, the held outputs of the requests that
// have finished, and keeps the others held; nil when none has.
func (g *MultiStepGroup) ReleaseFinished() []Output {
	if g.finished == nil {
		g.finished = make(map[uint64]struct{})
	}
	clear(g.finished)
	for i := range g.held {
		if g.held[i].Finished {
			g.finished[g.held[i].ID] = struct{}{}
		}
	}
	if len(g.finished) == 0 {
		return nil
	}
	var out []Output
	kept := g.held[:0]
	for _, o := range g.held {
		if _, ok := g.finished[o.ID]; ok {
			out = append(out, o)
		} else {
			kept = append(kept, o)
		}
	}
	g.held = kept
	return out
}
