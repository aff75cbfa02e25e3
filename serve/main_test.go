package serve

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/tokenizer"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// linearModel is a step-time model for tests: a fixed cost per step plus a
// cost per token computed.
type linearModel struct {
	fixed, perToken time.Duration
}

func (l linearModel) StepTime(s perf.StepShape) time.Duration {
	if s.Tokens() == 0 {
		return 0
	}
	return l.fixed + time.Duration(s.Tokens())*l.perToken
}

var (
	testTokOnce sync.Once
	testTok     tokenizer.Tokenizer
	testTokErr  error
)

// cl100k loads the built-in tokenizer once per test binary.
func cl100k(t testing.TB) tokenizer.Tokenizer {
	t.Helper()
	testTokOnce.Do(func() {
		testTok, testTokErr = tokenizer.New(context.Background(), "cl100k_base", tokenizer.Options{})
	})
	if testTokErr != nil {
		t.Fatalf("loading cl100k_base: %v", testTokErr)
	}
	return testTok
}

func testEngineConfig() engine.Config {
	return engine.Config{
		Version:              engine.V1,
		BlockSize:            16,
		NumGPUBlocks:         4096,
		MaxNumSeqs:           256,
		MaxNumBatchedTokens:  2048,
		MaxModelLen:          4096,
		EnableChunkedPrefill: true,
		EnablePrefixCaching:  true,
	}
}

func testConfig(t testing.TB) Config {
	return Config{
		Engine:    testEngineConfig(),
		StepModel: linearModel{fixed: 2 * time.Millisecond, perToken: 2 * time.Microsecond},
		Model:     "test-model",
		Tokenizer: cl100k(t),
		Seed:      7,
	}
}

// startServer starts a server on a free loopback port and closes it when
// the test ends.
func startServer(t testing.TB, cfg Config) *Running {
	t.Helper()
	r, err := Start(context.Background(), cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}
