package validate

import (
	"strings"
)

// Family groups the metrics whose errors are summarised together.
type Family string

// The metric families, in table order.
const (
	FamilyThroughput Family = "throughput"
	FamilyTPOT       Family = "tpot_itl"
	FamilyTTFT       Family = "ttft"
	FamilyE2E        Family = "e2e"
)

// Families lists every family in table order.
func Families() []Family { return []Family{FamilyThroughput, FamilyTPOT, FamilyTTFT, FamilyE2E} }

// Title is the family's column heading.
func (f Family) Title() string {
	switch f {
	case FamilyThroughput:
		return "Throughput"
	case FamilyTPOT:
		return "TPOT/ITL"
	case FamilyTTFT:
		return "TTFT"
	case FamilyE2E:
		return "E2E"
	}
	return string(f)
}

// headline are the keys, in order of preference, whose error stands for
// a run in its family's summary: one figure per run, so a run that printed
// mean, median and P99 does not count three times. Means come first:
// every vLLM release prints them.
var headline = map[Family][]string{
	FamilyThroughput: {"output_throughput", "total_token_throughput", "request_throughput"},
	FamilyTPOT:       {"mean_tpot_ms", "mean_itl_ms", "median_tpot_ms", "median_itl_ms"},
	FamilyTTFT:       {"mean_ttft_ms", "median_ttft_ms"},
	FamilyE2E:        {"mean_e2el_ms", "median_e2el_ms"},
}

// familyOf is the family a published key belongs to; "" for keys that are
// not compared (completed, duration, token totals).
func familyOf(key string) Family {
	switch key {
	case "request_throughput", "output_throughput", "total_token_throughput", "input_throughput", "max_output_tokens_per_s":
		return FamilyThroughput
	}
	m := metricKey.FindStringSubmatch(key)
	if m == nil {
		return ""
	}
	switch m[4] {
	case "tpot", "itl":
		return FamilyTPOT
	case "ttft":
		return FamilyTTFT
	case "e2el":
		return FamilyE2E
	}
	return ""
}

// ParseFamily accepts a family's name or title.
func ParseFamily(s string) (Family, bool) {
	k := strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(strings.TrimSpace(s)))
	for _, f := range Families() {
		if k == string(f) || k == strings.ToLower(strings.NewReplacer("/", "_").Replace(f.Title())) {
			return f, true
		}
	}
	switch k {
	case "tpot", "itl":
		return FamilyTPOT, true
	case "e2el", "latency":
		return FamilyE2E, true
	}
	return "", false
}

// keyOrder sorts a run's metrics: by family, then the headline keys first,
// then the rest by name.
func keyOrder(key string) (int, int, string) {
	f := familyOf(key)
	fi := len(Families())
	for i, g := range Families() {
		if g == f {
			fi = i
		}
	}
	for i, k := range headline[f] {
		if k == key {
			return fi, i, key
		}
	}
	return fi, len(headline[f]), key
}
