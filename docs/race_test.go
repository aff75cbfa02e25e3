//go:build race

package docs

// raceEnabled: the test binary runs under the race detector.
const raceEnabled = true
