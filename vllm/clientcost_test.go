package vllm

import (
	"testing"
	"time"
)

func TestBenchClientCost(t *testing.T) {
	tests := []struct {
		speed float64
		scale float64
	}{
		{speed: 1, scale: clientCPUSlowdown},
		{speed: 0, scale: clientCPUSlowdown},
		{speed: 2, scale: clientCPUSlowdown / 2},
	}
	for _, tt := range tests {
		req, chunk := BenchClientCost(tt.speed)
		wantReq := time.Duration(float64(measuredClientPerRequest) * tt.scale)
		wantChunk := time.Duration(float64(measuredClientPerChunk) * tt.scale)
		if req != wantReq || chunk != wantChunk || req <= chunk || chunk <= 0 {
			t.Errorf("speed %g: got %v, %v; want %v, %v (per request above per chunk above 0)",
				tt.speed, req, chunk, wantReq, wantChunk)
		}
	}
}
