package report

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDecodeCapturedVLLMResult is the cost of reading one real
// --save-result file.
func BenchmarkDecodeCapturedVLLMResult(b *testing.B) {
	data, err := os.ReadFile(vllmCapture)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := DecodeResultObjects(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadSweepDirectory reads a 100-point sweep through its manifest
// and builds the comparison table.
func BenchmarkLoadSweepDirectory(b *testing.B) {
	dir := b.TempDir()
	rates := make([]float64, 100)
	for i := range rates {
		rates[i] = 0.1 * float64(i+1)
	}
	writeSweepFixture(b, dir, "bench", 12, rates, false)
	for b.Loop() {
		results, err := LoadResults(dir)
		if err != nil {
			b.Fatal(err)
		}
		if err := NewCompareTable(results, CompareOptions{GroupBy: "request_rate"}).WriteTerminal(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHTMLReport100kRequests renders the HTML report of one run with
// 100,000 per-request records (read from records.jsonl, downsampled to
// 2,000 timeline bars) and reports the page size.
func BenchmarkHTMLReport100kRequests(b *testing.B) {
	dir := b.TempDir()
	path := syntheticRun{label: "big", rate: 200, capacity: 260, requests: 100_000, outputLen: 16, seed: 5, detailed: true, server: false}.write(b, dir)
	info, err := os.Stat(filepath.Join(dir, "big.records.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(info.Size())
	results, err := LoadResults(path)
	if err != nil {
		b.Fatal(err)
	}
	var size int
	for b.Loop() {
		var w countingWriter
		if err := WriteHTML(&w, results, HTMLOptions{}); err != nil {
			b.Fatal(err)
		}
		size = int(w)
	}
	b.ReportMetric(float64(size)/1024, "KiB/page")
}

type countingWriter int

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}
