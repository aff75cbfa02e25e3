package workload

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// Length distributions of the random dataset (--random-length-dist).
const (
	// LengthDistUniform is vLLM's: every length uniform in its
	// --random-range-ratio band around --random-input-len and
	// --random-output-len.
	LengthDistUniform = "uniform"
	// LengthDistShareGPT spreads lengths as ShareGPT's do, at the means
	// --random-input-len and --random-output-len: prompts take the shape
	// of vLLM's own ShareGPT sample (shareGPTPromptLens, in its order), and
	// outputs a log-normal of ShareGPT's median-to-mean ratio.
	LengthDistShareGPT = "sharegpt"
)

func lengthDistNames() []string { return []string{LengthDistUniform, LengthDistShareGPT} }

// ShareGPT's reply lengths (vLLM's ShareGPT sampler and SGLang's of 2024
// keep the same conversations: both drop prompts or replies under 4
// tokens, prompts over 1,024 and pairs over 2,048) have a median of 0.63
// of their mean. Mean: SGLang issue #2097 printed 226,901 output tokens for
// the 1,200 replies its sampler draws at its default seed (Llama 3.1's
// tokenizer, ignore_eos, so each reply is as long as ShareGPT's), 189.1
// a request. Median: SGLang's published vLLM 0.6.0 run at 8 requests/s on
// an A100 (validate's corpus, run sglang-benchmark-vllm-060/
// a100-llama31-8b-sharegpt2400-rps8, a fit run) has median E2E 2137.16 ms,
// median TTFT 120.39 ms and median TPOT 17.09 ms, so its median request
// generated (2137.16 − 120.39) / 17.09 + 1 = 119.0 tokens [approximate:
// the median request by E2E taken as the median by length, which holds
// below saturation where TTFT and TPOT vary little]. The family is an
// assumption: a log-normal with that ratio, σ = √(−2 ln(119.0/189.1)).
const (
	shareGPTMeanOutput   = 226901.0 / 1200
	shareGPTMedianOutput = (2137.16-120.39)/17.09 + 1
)

var shareGPTOutputSigma = math.Sqrt(-2 * math.Log(shareGPTMedianOutput/shareGPTMeanOutput))

// shareGPTLengthStream seeds the output lengths' draws, apart from the
// dataset's and the arrivals' streams.
const shareGPTLengthStream uint64 = 0x94d049bb133111eb

// shareGPTLengths is n requests' lengths shaped as ShareGPT's, totalling
// n·inputLen prompt and n·outputLen output tokens (inputLen and outputLen
// at least 1, as Validate requires). Request i's prompt is
// shareGPTPromptLens[i mod 1000], scaled; its output an independent
// log-normal draw, kept where the samplers keep replies (4 tokens or
// more, 2,048 with the prompt, in the sample's own tokens) and then
// scaled. The same seed gives the same lengths.
func shareGPTLengths(n, inputLen, outputLen int, seed int64) []RequestLengths {
	promptShape := make([]float64, n)
	outputShape := make([]float64, n)
	rng := newRand(seed, shareGPTLengthStream)
	for i := range n {
		prompt := float64(shareGPTPromptLens[i%len(shareGPTPromptLens)])
		promptShape[i] = prompt
		outputShape[i] = shareGPTOutput(rng, prompt)
	}
	// Every request gets one token of each first, so no length is 0
	// and the totals stay exact for any mean of at least one.
	inputs := apportion(promptShape, n*(inputLen-1))
	outputs := apportion(outputShape, n*(outputLen-1))
	lens := make([]RequestLengths, n)
	for i := range lens {
		lens[i] = RequestLengths{Input: 1 + inputs[i], Output: 1 + outputs[i]}
	}
	return lens
}

// shareGPTOutput draws one reply's length for a prompt of the given
// length, in the sample's tokens: the log-normal, redrawn while outside
// the samplers' bounds (rarely: 0.3% of draws pass 2,048 tokens).
func shareGPTOutput(rng *rand.Rand, prompt float64) float64 {
	const minReply, maxPair = 4, 2048
	limit := max(minReply, maxPair-prompt)
	for range 64 {
		o := shareGPTMedianOutput * math.Exp(shareGPTOutputSigma*rng.NormFloat64())
		if o >= minReply && o <= limit {
			return o
		}
	}
	return shareGPTMedianOutput
}

// apportion splits total into integer shares proportional to weights,
// summing exactly to total: each share is rounded down and the remainder
// goes, a token each, to the largest fractions (the earlier on a tie).
func apportion(weights []float64, total int) []int {
	sum := 0.0
	for _, w := range weights {
		sum += w
	}
	shares := make([]int, len(weights))
	frac := make([]float64, len(weights))
	given := 0
	for i, w := range weights {
		exact := w / sum * float64(total)
		shares[i] = int(exact)
		frac[i] = exact - float64(shares[i])
		given += shares[i]
	}
	// Indices by falling fraction; the stable sort keeps the earlier on a tie.
	order := make([]int, len(weights))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(frac[b], frac[a]) })
	for _, i := range order[:max(0, min(len(order), total-given))] {
		shares[i]++
	}
	return shares
}
