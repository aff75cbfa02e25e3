package engine

import (
	"slices"
	"testing"

	"github.com/servebench/servebench/perf"
)

// TestMultiStepGroup: a decode step opens a group of Steps steps, a
// prefill step stays alone, and a lagged step's outputs go out as vLLM
// 0.6's multi-step runner hands them on: all at the group's end or when
// streamed, only finished requests' when pythonised early, else none.
func TestMultiStepGroup(t *testing.T) {
	g := MultiStepGroup{Steps: 3}
	decode, prefill := perf.StepShape{Decodes: 2}, perf.StepShape{Prefills: 1, PrefillTokens: 10}
	type placed struct{ cont, open bool }
	var got []placed
	for _, s := range []perf.StepShape{prefill, decode, decode, decode, decode} {
		c, o := g.Place(s)
		got = append(got, placed{c, o})
	}
	want := []placed{{false, false}, {false, true}, {true, true}, {true, false}, {false, true}}
	if !slices.Equal(got, want) {
		t.Errorf("placements %v, want %v", got, want)
	}
	if !g.Open() {
		t.Error("a group opened by the last decode step is not open")
	}
	g.End()
	if g.Open() {
		t.Error("End left the group open")
	}

	ids := func(outs []Output) []uint64 {
		var out []uint64
		for _, o := range outs {
			out = append(out, o.ID)
		}
		return out
	}
	step1 := []Output{{ID: 1, NewTokens: 1}, {ID: 2, NewTokens: 1}}
	step2 := []Output{{ID: 1, NewTokens: 1, Finished: true}, {ID: 2, NewTokens: 1}}
	for _, c := range []struct {
		name                         string
		groupEnd, stream, pythonised bool
		wantIDs                      []uint64
		wantHandOn                   bool
		wantHeld                     []uint64
	}{
		{"group end", true, false, false, []uint64{1, 2, 1, 2}, true, nil},
		{"streamed", false, true, false, []uint64{1, 2, 1, 2}, true, nil},
		{"pythonised: the finished request", false, false, true, []uint64{1, 1}, true, []uint64{2, 2}},
		{"not pythonised", false, false, false, nil, false, []uint64{1, 2, 1, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var g MultiStepGroup
			g.Hold(step1)
			out, handOn := g.HandOnLagged(step2, c.groupEnd, c.stream, c.pythonised)
			if !slices.Equal(ids(out), c.wantIDs) || handOn != c.wantHandOn {
				t.Errorf("handed on %v (%v), want %v (%v)", ids(out), handOn, c.wantIDs, c.wantHandOn)
			}
			if held := ids(g.Release()); !slices.Equal(held, c.wantHeld) {
				t.Errorf("still held %v, want %v", held, c.wantHeld)
			}
		})
	}
}
