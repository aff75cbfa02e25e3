package vllm

import (
	"strings"
	"testing"

	"github.com/servebench/servebench/engine"
)

func TestLookup(t *testing.T) {
	cases := []struct {
		version     string
		eng         engine.Version
		wantRelease string
		wantEngine  engine.Version
		wantErr     string
	}{
		{"", "", "0.8.5", engine.V1, ""},
		{"", engine.V0, "0.5.4", engine.V0, ""},
		{"0.5", "", "0.5.4", engine.V0, ""},
		{"0.5.3", "", "0.5.3", engine.V0, ""},
		{"0.6", "", "0.6.6", engine.V0, ""},
		{"v0.6.3", "", "0.6.3", engine.V0, ""},
		{"0.7.3", "", "0.7.3", engine.V0, ""},
		{"0.8", "", "0.8.5", engine.V1, ""},
		{"0.8.5", engine.V0, "0.8.5", engine.V0, ""},
		{"0.12.1", "", "0.12.1", engine.V1, ""},
		{"0.6.3", engine.V1, "", "", "vLLM 0.6.3 has no V1 engine"},
		{"0.11.0", engine.V0, "", "", "vLLM 0.11.0 has no V0 engine"},
		{"0.4", "", "0.4.3", engine.V0, ""},
		{"0.4.2", "", "0.4.2", engine.V0, ""},
		{"0.4.2", engine.V1, "", "", "vLLM 0.4.2 has no V1 engine"},
		{"0.3.3", "", "", "", "vLLM version 0.3.3 is not modelled; known release lines: 0.4, 0.5, 0.6, 0.7-0.10, 0.11+"},
		{"9.9", "", "", "", "vLLM version 9.9.0 is not modelled; known release lines: 0.4, 0.5, 0.6, 0.7-0.10, 0.11+"},
		{"1.0.0", "", "", "", "vLLM version 1.0.0 is not modelled; known release lines: 0.4, 0.5, 0.6, 0.7-0.10, 0.11+"},
		{"six", "", "", "", `vLLM version "six": give X.Y or X.Y.Z`},
	}
	for _, c := range cases {
		t.Run(c.version+"/"+string(c.eng), func(t *testing.T) {
			p, err := Lookup(c.version, c.eng)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Release.String() != c.wantRelease || p.Engine != c.wantEngine {
				t.Errorf("got %s, want %s (%s)", p.Name(), c.wantRelease, c.wantEngine)
			}
		})
	}
}

// The switches each release line changed (doc.go cites the PRs).
func TestReleaseSwitches(t *testing.T) {
	cases := []struct {
		version          string
		legacy, async    bool
		multiStep        bool
		overlap          Overlap
		prefixCachingDef bool
	}{
		{"0.5.3", false, false, false, OverlapNone, false},
		// The OpenAI server in its own process from 0.5.4 (PR #6883).
		{"0.5.4", true, false, false, OverlapSeparateAPI, false},
		{"0.5.5", true, false, true, OverlapSeparateAPI, false},
		{"0.6.0", false, true, true, OverlapAsyncOutput, false},
		{"0.8.5", false, false, false, OverlapEngineCore, true},
	}
	for _, c := range cases {
		p, err := Lookup(c.version, "")
		if err != nil {
			t.Fatal(err)
		}
		s := p.Scheduler
		if s.LegacyRequeueOrder != c.legacy || s.AsyncOutputProc != c.async || s.MultiStep != c.multiStep ||
			p.Host.Overlap != c.overlap || p.Defaults.PrefixCaching != c.prefixCachingDef {
			t.Errorf("%s: got %+v overlap %s prefix caching %v", c.version, s, p.Host.Overlap, p.Defaults.PrefixCaching)
		}
	}
	// The 0.5 table entry must not change through the patch switches.
	if v05.Scheduler.MultiStep || v05.Scheduler.LegacyRequeueOrder || v05.Host.Overlap != OverlapNone {
		t.Error("Lookup modified the shared 0.5 profile")
	}
}

// Each release counts non-torch memory as its profile run did (doc.go).
func TestMemoryAccountingByRelease(t *testing.T) {
	cases := []struct {
		version  string
		nonTorch float64
	}{{"0.5.4", 1.25}, {"0.6.3", 1.25}, {"0.6.4", 0.35}, {"0.6.6", 1.79}, {"0.7.3", 0.16}, {"0.8.5", 0.16}, {"0.11.0", 0.16}}
	for _, c := range cases {
		p, err := Lookup(c.version, "")
		if err != nil {
			t.Fatal(err)
		}
		if p.Memory.NonTorchGiB != c.nonTorch {
			t.Errorf("%s: non-torch %.2f GiB (%s), want %.2f", c.version, p.Memory.NonTorchGiB, p.Memory.Method, c.nonTorch)
		}
	}
}
