package vllm

import "time"

// BenchClientCost is the CPU vLLM's own benchmark client
// (benchmark_serving.py, `vllm bench serve`) spends per request and per
// streamed token chunk on a machine clientSpeed times as fast as the
// default host (doc.go, "Benchmark client"). clientSpeed ≤ 0 means 1.
func BenchClientCost(clientSpeed float64) (perRequest, perChunk time.Duration) {
	if clientSpeed <= 0 {
		clientSpeed = 1
	}
	f := clientCPUSlowdown / clientSpeed
	return time.Duration(float64(measuredClientPerRequest) * f),
		time.Duration(float64(measuredClientPerChunk) * f)
}
