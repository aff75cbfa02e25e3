package tune

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// feasibilityProbes bounds the points FindValidPoint checks: each is one
// pass through the release's resolver, no run.
const feasibilityProbes = 512

// FindValidPoint checks, before a study runs anything, that its space
// holds a point vLLM would start with: every point of a small discrete
// space, else feasibilityProbes seeded draws, through the conditions and
// validate. A space with none fails with the reason most points gave, so
// a study never spends its budget recording INVALID trials.
func FindValidPoint(ctx context.Context, space *Space, known map[string]string, validate Validator, seed int64) error {
	points := enumerate(space, feasibilityProbes)
	if points == nil {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
		for range feasibilityProbes {
			points = append(points, drawPoint(space, rng))
		}
	}
	reasons := map[string]int{}
	for _, p := range points {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := space.ApplyConditions(p, known); err != nil {
			reasons[err.Error()]++
			continue
		}
		if _, err := validate(ctx, p); err != nil {
			reasons[oneLine(err.Error())]++
			continue
		}
		return nil
	}
	common, n := "", 0
	for r, c := range reasons {
		if c > n || c == n && r < common {
			common, n = r, c
		}
	}
	return fmt.Errorf("the search space holds no point vLLM accepts (%d of %d checked points refused with: %s); widen --param or change the fixed flags",
		n, len(points), common)
}

// enumerate lists every point of a space of choices and booleans with at
// most limit points; nil when it has a range or more points.
func enumerate(space *Space, limit int) []Point {
	points := []Point{{}}
	for _, prm := range space.Params {
		var values []string
		switch prm.Kind {
		case KindPinned:
			values = []string{prm.Value}
		case KindBool:
			values = []string{"true", "false"}
		case KindChoice:
			values = prm.Choices
		default:
			return nil
		}
		if len(points)*len(values) > limit {
			return nil
		}
		var next []Point
		for _, p := range points {
			for _, v := range values {
				q := clonePoint(p)
				q[prm.Name] = v
				next = append(next, q)
			}
		}
		points = next
	}
	return points
}

// drawPoint is a uniform draw from the space (log-uniform on log ranges).
func drawPoint(space *Space, rng *rand.Rand) Point {
	p := Point{}
	for _, prm := range space.Params {
		switch prm.Kind {
		case KindPinned:
			p[prm.Name] = prm.Value
		case KindBool:
			p[prm.Name] = strconv.FormatBool(rng.IntN(2) == 0)
		case KindChoice:
			p[prm.Name] = prm.Choices[rng.IntN(len(prm.Choices))]
		case KindInt, KindFloat:
			u := rng.Float64()
			v := prm.Low + u*(prm.High-prm.Low)
			if prm.Log {
				v = math.Exp(math.Log(prm.Low) + u*(math.Log(prm.High)-math.Log(prm.Low)))
			}
			if prm.Kind == KindInt {
				v = math.Min(math.Max(math.Round(v), prm.Low), prm.High)
			}
			p[prm.Name] = formatValue(prm, v)
		}
	}
	return p
}
