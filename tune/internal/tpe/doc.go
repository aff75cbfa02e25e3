// Package tpe is goptuna v0.9.0's TPE sampler (github.com/c-bata/goptuna,
// MIT, see LICENSE), vendored with one change: the mixture component and
// categorical draws (goptuna's internal/random) use the sampler's seeded
// source instead of math/rand's global one, which Go seeds randomly, so
// a seeded study samples the same points every time.
package tpe
