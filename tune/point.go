package tune

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Point is one configuration: a flag value (as typed on the command
// line) per parameter name, pinned ones included.
type Point map[string]string

// Args are the point's flags in the space's order, as servebench's sim
// and serve take them (--enable-prefix-caching=false).
func (p Point) Args(s *Space) []string {
	var out []string
	for _, prm := range s.Params {
		if v, ok := p[prm.Name]; ok {
			out = append(out, prm.Flag()+"="+v)
		}
	}
	return out
}

// VLLMArgs are the point's flags as `vllm serve` takes them: booleans
// as --flag / --no-flag (argparse's BooleanOptionalAction).
func (p Point) VLLMArgs(s *Space) []string {
	var out []string
	for _, prm := range s.Params {
		v, ok := p[prm.Name]
		if !ok {
			continue
		}
		if b, err := strconv.ParseBool(v); err == nil && (prm.Kind == KindBool || v == "true" || v == "false") {
			if b {
				out = append(out, prm.Flag())
			} else {
				out = append(out, "--no-"+strings.TrimPrefix(prm.Flag(), "--"))
			}
			continue
		}
		out = append(out, prm.Flag(), v)
	}
	return out
}

// String is the point in the space's order: "max_num_seqs=64 block_size=16".
func (p Point) String(s *Space) string {
	var parts []string
	for _, prm := range s.Params {
		if v, ok := p[prm.Name]; ok && prm.Kind != KindPinned {
			parts = append(parts, prm.Name+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

// comparison is one side of a condition: NAME OP NAME-or-literal.
type comparison struct{ left, op, right string }

type condition struct {
	src  Condition
	when *comparison
	then comparison
}

var comparisonOps = []string{"==", "!=", ">=", "<=", ">", "<"}

func parseComparison(s string) (comparison, error) {
	for _, op := range comparisonOps {
		if i := strings.Index(s, op); i > 0 {
			c := comparison{strings.TrimSpace(s[:i]), op, strings.TrimSpace(s[i+len(op):])}
			if c.left == "" || c.right == "" {
				break
			}
			return c, nil
		}
	}
	return comparison{}, fmt.Errorf("condition %q: write NAME OP VALUE with OP one of == != >= <= > <, e.g. max_num_batched_tokens >= max_model_len", s)
}

func parseCondition(c Condition) (condition, error) {
	out := condition{src: c}
	if strings.TrimSpace(c.If) != "" {
		w, err := parseComparison(c.If)
		if err != nil {
			return out, err
		}
		out.when = &w
	}
	t, err := parseComparison(c.Then)
	if err != nil {
		return out, err
	}
	out.then = t
	return out, nil
}

// ParseCondition reads a --condition flag: "IF => THEN" or "THEN".
func ParseCondition(s string) (Condition, error) {
	c := Condition{Then: s}
	if l, r, ok := strings.Cut(s, "=>"); ok {
		c = Condition{If: strings.TrimSpace(l), Then: strings.TrimSpace(r)}
	}
	if _, err := parseCondition(c); err != nil {
		return Condition{}, fmt.Errorf("--condition: %w", err)
	}
	return c, nil
}

// value resolves an operand: a parameter of the point, a known value of
// the study (the model's max_model_len), or a literal.
func value(operand string, p Point, known map[string]string) (string, bool) {
	if v, ok := p[operand]; ok {
		return v, true
	}
	if v, ok := known[operand]; ok {
		return v, true
	}
	if isIdentifier(operand) && operand != "true" && operand != "false" {
		return "", false
	}
	return operand, true
}

func isIdentifier(s string) bool {
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return s != "" && !(s[0] >= '0' && s[0] <= '9')
}

func (c comparison) holds(p Point, known map[string]string) (bool, error) {
	l, okL := value(c.left, p, known)
	r, okR := value(c.right, p, known)
	if !okL || !okR {
		missing := c.left
		if okL {
			missing = c.right
		}
		return false, fmt.Errorf("condition names %s, which is neither a parameter nor a known value of the study; pin it with --param %s=VALUE", missing, missing)
	}
	lf, errL := strconv.ParseFloat(l, 64)
	rf, errR := strconv.ParseFloat(r, 64)
	if errL == nil && errR == nil {
		switch c.op {
		case "==":
			return lf == rf, nil
		case "!=":
			return lf != rf, nil
		case ">=":
			return lf >= rf, nil
		case "<=":
			return lf <= rf, nil
		case ">":
			return lf > rf, nil
		}
		return lf < rf, nil
	}
	if lb, err := strconv.ParseBool(l); err == nil {
		if rb, err := strconv.ParseBool(r); err == nil {
			l, r = strconv.FormatBool(lb), strconv.FormatBool(rb)
		}
	}
	switch c.op {
	case "==":
		return l == r, nil
	case "!=":
		return l != r, nil
	}
	return false, fmt.Errorf("condition %s %s %s compares non-numbers with %s", c.left, c.op, c.right, c.op)
}

// ApplyConditions enforces the space's conditions on p. A violated
// "X >= Y" or "X <= Y" whose X is a sampled range is repaired by moving X
// to the bound when the range allows it, so the sampler's point becomes a
// valid neighbour instead of a wasted trial; any other violation is
// returned as the point's rejection reason. It returns the names it
// repaired.
func (s *Space) ApplyConditions(p Point, known map[string]string) ([]string, error) {
	var repaired []string
	for _, src := range s.Conditions {
		c, err := parseCondition(src)
		if err != nil {
			return repaired, err
		}
		if c.when != nil {
			ok, err := c.when.holds(p, known)
			if err != nil {
				return repaired, err
			}
			if !ok {
				continue
			}
		}
		ok, err := c.then.holds(p, known)
		if err != nil {
			return repaired, err
		}
		if ok {
			continue
		}
		if s.repair(p, known, c.then) {
			repaired = append(repaired, c.then.left)
			continue
		}
		return repaired, fmt.Errorf("condition %s does not hold and %s cannot be moved within its range", src, c.then.left)
	}
	return repaired, nil
}

func (s *Space) repair(p Point, known map[string]string, c comparison) bool {
	prm, ok := s.Lookup(c.left)
	if !ok || (prm.Kind != KindInt && prm.Kind != KindFloat) || (c.op != ">=" && c.op != "<=") {
		return false
	}
	r, ok := value(c.right, p, known)
	if !ok {
		return false
	}
	bound, err := strconv.ParseFloat(r, 64)
	if err != nil || bound < prm.Low || bound > prm.High {
		return false
	}
	if prm.Kind == KindInt {
		if c.op == ">=" {
			bound = math.Ceil(bound)
		} else {
			bound = math.Floor(bound)
		}
	}
	p[c.left] = formatValue(prm, bound)
	return true
}

func formatValue(p Param, v float64) string {
	if p.Kind == KindInt {
		return strconv.FormatInt(int64(math.Round(v)), 10)
	}
	return strconv.FormatFloat(v, 'g', 4, 64) // flags read better, and vLLM cannot tell the difference
}
