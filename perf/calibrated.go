package perf

import (
	"fmt"
	"math"
	"os"
	"time"
)

// Calibrated is a linear step-time model fitted to measurements:
//
//	T = Base + PrefillToken·PrefillTokens + Decode·Decodes + KVToken·KVTokens
//	      + AttnPair·AttnPairs + SwapBlock·(SwapInBlocks+SwapOutBlocks)
//
// Coefficients are in seconds; a fit may give negative ones, so the sum is
// clamped at zero. An empty step takes no time.
type Calibrated struct {
	Base, PrefillToken, Decode, KVToken, AttnPair, SwapBlock float64
}

var _ StepModel = Calibrated{}

// StepTime implements StepModel.
func (c Calibrated) StepTime(s StepShape) time.Duration {
	swapped := nonNegative(s.SwapInBlocks) + nonNegative(s.SwapOutBlocks)
	if s.Tokens() <= 0 && swapped == 0 {
		return 0
	}
	sec := c.Base + c.PrefillToken*nonNegative(s.PrefillTokens) + c.Decode*nonNegative(s.Decodes) +
		c.KVToken*nonNegative64(s.KVTokens) + c.AttnPair*nonNegative64(s.AttnPairs) + c.SwapBlock*swapped
	return toDuration(sec)
}

// calibratedFile is the YAML form, in microseconds because per-token
// coefficients are small:
//
//	base_us: 2500
//	prefill_token_us: 25
//	decode_us: 40
//	kv_token_us: 0.002
//	attn_pair_us: 0.00001
//	swap_block_us: 150
type calibratedFile struct {
	BaseUs         float64 `yaml:"base_us"`
	PrefillTokenUs float64 `yaml:"prefill_token_us"`
	DecodeUs       float64 `yaml:"decode_us"`
	KVTokenUs      float64 `yaml:"kv_token_us"`
	AttnPairUs     float64 `yaml:"attn_pair_us"`
	SwapBlockUs    float64 `yaml:"swap_block_us"`
}

// LoadCalibratedFile reads a Calibrated model from YAML (JSON is YAML too).
func LoadCalibratedFile(path string) (Calibrated, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Calibrated{}, fmt.Errorf("perf: read calibrated model: %w", err)
	}
	return ParseCalibrated(data, path)
}

// ParseCalibrated parses the YAML LoadCalibratedFile reads; name appears in
// errors.
func ParseCalibrated(data []byte, name string) (Calibrated, error) {
	fail := func(format string, args ...any) (Calibrated, error) {
		return Calibrated{}, fmt.Errorf("perf: calibrated model %s: %s", name, fmt.Sprintf(format, args...))
	}
	var f calibratedFile
	if err := decodeYAMLDocument(data, &f, "base_us, prefill_token_us, decode_us, kv_token_us, attn_pair_us, swap_block_us"); err != nil {
		return fail("%v", err)
	}
	coefficients := []struct {
		v     float64
		field string
	}{
		{f.BaseUs, "base_us"}, {f.PrefillTokenUs, "prefill_token_us"}, {f.DecodeUs, "decode_us"},
		{f.KVTokenUs, "kv_token_us"}, {f.AttnPairUs, "attn_pair_us"}, {f.SwapBlockUs, "swap_block_us"},
	}
	for _, c := range coefficients {
		// One hour per unit is far beyond any fit; it also keeps sums finite.
		if math.IsNaN(c.v) || math.Abs(c.v) > 3.6e9 {
			return fail("%s is %v; give a finite coefficient in microseconds", c.field, c.v)
		}
	}
	const us = 1e-6
	return Calibrated{
		Base: f.BaseUs * us, PrefillToken: f.PrefillTokenUs * us, Decode: f.DecodeUs * us,
		KVToken: f.KVTokenUs * us, AttnPair: f.AttnPairUs * us, SwapBlock: f.SwapBlockUs * us,
	}, nil
}
