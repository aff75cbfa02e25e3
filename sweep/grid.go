// Package sweep runs a benchmark or simulation over a grid of flag values
// and searches for the highest load that meets an SLA. It knows nothing of
// HTTP or of bench and sim: every point is one call of a Runner with a
// command line, and results are the JSON maps those runs save. Each sweep
// lives in a run directory with one result per point and a manifest.json
// that makes it resumable and readable by package report.
package sweep

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/servebench/servebench/internal/option"
	"github.com/servebench/servebench/report"
)

// Param is one swept flag and its value; the type report reads manifests
// with.
type Param = report.Param

// Axis is one swept flag (without dashes) and its values in order.
type Axis struct {
	Flag   string   `json:"flag"`
	Values []string `json:"values"`
}

// ListValuedFlags are flags whose values are comma lists in their own
// right, so a comma in them does not make an axis.
func ListValuedFlags() []string {
	return []string{"percentile-metrics", "metric-percentiles", "extra-body", "header", "metadata", "goodput"}
}

// ParseArgs splits benchmark flags into fixed arguments and axes: a flag
// whose value is a comma list ("--num-prompts 1,2,4" or
// "--request-rate=2,4") becomes an axis; everything else passes through
// unchanged. Values that look like JSON ("{...}", "[...]") and flags named
// in literal (default ListValuedFlags) are never split.
func ParseArgs(args []string, literal []string) (base []string, axes []Axis, err error) {
	if literal == nil {
		literal = ListValuedFlags()
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "-") || arg == "-" || arg == "--" {
			base = append(base, arg)
			continue
		}
		name, value, inline := strings.Cut(arg, "=")
		if !inline {
			if i+1 < len(args) && !isFlagToken(args[i+1]) {
				value = args[i+1]
				i++
			} else {
				base = append(base, arg)
				continue
			}
		}
		flag := strings.TrimLeft(name, "-")
		if !strings.Contains(value, ",") || slices.Contains(literal, flag) || looksLikeJSON(value) {
			base = append(base, name, value)
			continue
		}
		if slices.ContainsFunc(axes, func(a Axis) bool { return a.Flag == flag }) {
			return nil, nil, fmt.Errorf("--%s is given twice as a list; merge the values into one list", flag)
		}
		var values []string
		for _, v := range strings.Split(value, ",") {
			v = strings.TrimSpace(v)
			if v == "" {
				return nil, nil, fmt.Errorf("--%s %s: empty value in the list; remove the extra comma", flag, value)
			}
			if slices.Contains(values, v) {
				return nil, nil, option.Errorf("--%s %s: %s is listed twice; use {repeat} to run a point more than once", flag, value, v)
			}
			values = append(values, v)
		}
		axes = append(axes, Axis{Flag: flag, Values: values})
	}
	for _, a := range axes {
		for _, arg := range base {
			if name, _, _ := strings.Cut(arg, "="); strings.HasPrefix(name, "-") && strings.TrimLeft(name, "-") == a.Flag {
				return nil, nil, fmt.Errorf("--%s is both swept and fixed; give it once", a.Flag)
			}
		}
	}
	return base, axes, nil
}

// isFlagToken tells a flag from a value; negative numbers are values.
func isFlagToken(s string) bool {
	if !strings.HasPrefix(s, "-") || s == "-" {
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return err != nil
}

func looksLikeJSON(v string) bool {
	v = strings.TrimSpace(v)
	return strings.HasPrefix(v, "{") || strings.HasPrefix(v, "[")
}

// Point is one run of a sweep.
type Point struct {
	Index  int     `json:"index"`
	Name   string  `json:"name"` // directory name, e.g. "003-num-prompts=8"
	Params []Param `json:"params"`
	Repeat int     `json:"repeat"` // 1-based
	// Args are the full benchmark flags of this point.
	Args []string `json:"args"`
	// Status is pending, running, done or failed.
	Status string `json:"status"`
	// Result is the result JSON's path relative to the run directory.
	Result    string  `json:"result"`
	Started   string  `json:"started,omitempty"`  // RFC 3339
	Finished  string  `json:"finished,omitempty"` // RFC 3339
	DurationS float64 `json:"duration_s,omitempty"`
	Error     string  `json:"error,omitempty"`
}

// Point statuses.
const (
	StatusPending = "pending"
	StatusRunning = "running"
	StatusDone    = "done"
	StatusFailed  = "failed"
)

// Grid expands axes into points: the Cartesian product with the first
// axis outermost and repeats innermost, so the order is fixed by the
// command line. Each point's args are base followed by its --flag=value
// pairs.
func Grid(base []string, axes []Axis, repeat int) []Point {
	repeat = max(repeat, 1)
	combos := [][]Param{nil}
	for _, a := range axes {
		var next [][]Param
		for _, c := range combos {
			for _, v := range a.Values {
				next = append(next, append(slices.Clone(c), Param{Flag: a.Flag, Value: v}))
			}
		}
		combos = next
	}
	total := len(combos) * repeat
	width := max(3, len(strconv.Itoa(total-1)))
	points := make([]Point, 0, total)
	for _, params := range combos {
		for r := 1; r <= repeat; r++ {
			i := len(points)
			name := fmt.Sprintf("%0*d", width, i)
			if len(params) > 0 {
				name += "-" + paramSlug(params)
			}
			if repeat > 1 {
				name += fmt.Sprintf("-r%d", r)
			}
			args := slices.Clone(base)
			for _, p := range params {
				args = append(args, "--"+p.Flag+"="+p.Value)
			}
			points = append(points, Point{
				Index: i, Name: name, Params: params, Repeat: r, Args: args,
				Status: StatusPending, Result: name + "/result.json",
			})
		}
	}
	return points
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._=+-]+`)

// paramSlug makes a readable, filesystem-safe directory name part.
func paramSlug(params []Param) string {
	parts := make([]string, len(params))
	for i, p := range params {
		parts[i] = p.Flag + "=" + p.Value
	}
	slug := unsafeName.ReplaceAllString(strings.Join(parts, "_"), "_")
	if len(slug) > 80 {
		slug = slug[:80]
	}
	return slug
}

// Describe names a point for people: "num-prompts=8 request-rate=2 (run 2)".
func (p Point) Describe() string {
	parts := make([]string, 0, len(p.Params)+1)
	for _, q := range p.Params {
		parts = append(parts, q.Flag+"="+q.Value)
	}
	s := strings.Join(parts, " ")
	if s == "" {
		s = p.Name
	}
	if suffix := fmt.Sprintf("-r%d", p.Repeat); strings.HasSuffix(p.Name, suffix) {
		s += fmt.Sprintf(" (run %d)", p.Repeat)
	}
	return s
}
