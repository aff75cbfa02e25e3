package serve

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/mix"
)

// FaultType is one kind of injected failure.
type FaultType string

const (
	FaultRateLimit     FaultType = "429"             // 429 before generation
	FaultInternal      FaultType = "500"             // 500 before generation
	FaultUnavailable   FaultType = "503"             // 503 before generation
	FaultDrop          FaultType = "drop"            // connection closed mid-stream (or before the body when not streaming)
	FaultSlowFirstByte FaultType = "slow-first-byte" // response delayed by SlowFirstByte before anything is written
)

// AllFaultTypes lists every fault type, the default set.
var AllFaultTypes = []FaultType{FaultRateLimit, FaultInternal, FaultUnavailable, FaultDrop, FaultSlowFirstByte}

// Faults configures fault injection for testing clients. Whether request k
// (in arrival order) fails, and how, is a pure function of (Seed, k), so a
// sequential client sees the same faults on every run.
type Faults struct {
	// Rate is the probability in [0,1] that a generation request fails.
	Rate float64
	// Types to draw from, uniformly; empty means all.
	Types []FaultType
	// SlowFirstByte is the delay of a slow-first-byte fault (default 2 s).
	SlowFirstByte time.Duration
}

// ParseFaultTypes parses the --failure-types flag: a comma-separated list.
func ParseFaultTypes(s string) ([]FaultType, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []FaultType
	for f := range strings.SplitSeq(s, ",") {
		t := FaultType(strings.TrimSpace(f))
		if !slices.Contains(AllFaultTypes, t) {
			return nil, fmt.Errorf("failure type %q: use a comma-separated list of 429, 500, 503, drop, slow-first-byte", t)
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

func (f Faults) validate() error {
	if f.Rate < 0 || f.Rate > 1 || f.Rate != f.Rate {
		return fmt.Errorf("failure rate %v: must be between 0 and 1", f.Rate)
	}
	for _, t := range f.Types {
		if !slices.Contains(AllFaultTypes, t) {
			return fmt.Errorf("failure type %q: use 429, 500, 503, drop or slow-first-byte", t)
		}
	}
	if f.SlowFirstByte < 0 {
		return fmt.Errorf("slow-first-byte delay %v: must not be negative", f.SlowFirstByte)
	}
	return nil
}

// pick decides the fault of the k-th generation request; "" means none.
func (f Faults) pick(seed uint64, k uint64) FaultType {
	if f.Rate <= 0 {
		return ""
	}
	h := mix.SplitMix64(seed ^ mix.SplitMix64(k^0x5fa17))
	if float64(h>>11)/(1<<53) >= f.Rate {
		return ""
	}
	types := f.Types
	if len(types) == 0 {
		types = AllFaultTypes
	}
	return types[mix.SplitMix64(h)%uint64(len(types))]
}

// dropAfter is after how many of n tokens a drop fault closes the stream.
func dropAfter(seed, k uint64, n int) int {
	if n <= 1 {
		return 0
	}
	return int(mix.SplitMix64(seed^mix.SplitMix64(k^0xd409)) % uint64(n))
}

func faultError(t FaultType) *apiError {
	switch t {
	case FaultRateLimit:
		return &apiError{Status: http.StatusTooManyRequests, Type: "RateLimitError",
			Message: "Rate limit exceeded (injected by servebench serve --failure-rate)."}
	case FaultInternal:
		return &apiError{Status: http.StatusInternalServerError, Type: "InternalServerError",
			Message: "Internal server error (injected by servebench serve --failure-rate)."}
	case FaultUnavailable:
		return &apiError{Status: http.StatusServiceUnavailable, Type: "ServiceUnavailableError",
			Message: "The server is overloaded (injected by servebench serve --failure-rate)."}
	}
	return nil
}
