//go:build race

package serve

// raceDetector: the race detector slows the emulator's step loop and sockets
// several-fold, so timing comparisons against the sim are meaningless.
const raceDetector = true
