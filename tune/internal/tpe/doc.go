// Package tpe is a Tree-structured Parzen Estimator sampler, written
// from the algorithm as Bergstra, Bardenet, Bengio and Kégl publish it
// in "Algorithms for Hyper-Parameter Optimization" (NeurIPS 2011, §4).
//
// For each parameter on its own, the finished trials are ranked by score
// and split in two: the best Gamma(n) form the good group, the rest the
// bad group. Each group becomes a density over the parameter's domain, an
// adaptive Parzen estimator: one truncated Gaussian per observation,
// centred on it and as wide as the larger gap to its neighbours, plus a
// broad prior component. Candidates are drawn from the good density l(x)
// and the one with the largest l(x)/g(x) is proposed, which the paper
// shows maximises expected improvement. Unordered choices get counts
// smoothed by the prior instead of Gaussians.
//
// The paper leaves the constants open; the defaults here are the ones
// Optuna documents for its TPESampler (optuna.readthedocs.io,
// optuna.samplers.TPESampler): gamma min(⌈n/10⌉, 25), observation weights
// flat for the newest 25 and ramping down linearly below them
// (default_weights), prior weight 1.0, 24 expected-improvement
// candidates, 10 random startup trials, the "magic clip" floor on
// bandwidths on, and the domain's endpoints not counted as neighbours.
// DefaultSettings returns them. Only the constants come from Optuna; the
// structure is this package's own.
//
// A Sampler draws from its own seeded source, so the same seed and the
// same history give the same suggestions, bit for bit.
package tpe
