package tokenizer

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// BenchmarkBuiltinEncode measures encode throughput on the sonnets (MB/s).
func BenchmarkBuiltinEncode(b *testing.B) {
	sonnet := readSonnet(b)
	for _, name := range []string{"r50k_base", "cl100k_base", "o200k_base"} {
		b.Run(name, func(b *testing.B) {
			tk := mustBuiltin(b, name)
			ctx := context.Background()
			b.SetBytes(int64(len(sonnet)))
			for b.Loop() {
				if _, err := tk.Encode(ctx, sonnet); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTiktokenGoEncode is the same work done by tiktoken-go, for comparison.
func BenchmarkTiktokenGoEncode(b *testing.B) {
	sonnet := readSonnet(b)
	for _, name := range []string{"r50k_base", "cl100k_base", "o200k_base"} {
		b.Run(name, func(b *testing.B) {
			enc := tiktokenGo()[name]
			b.SetBytes(int64(len(sonnet)))
			for b.Loop() {
				enc.EncodeOrdinary(sonnet)
			}
		})
	}
}

// BenchmarkHFEncode runs the tokenizer.json path: the real GPT-2 layout
// (converted from r50k) and Llama 3's layout over cl100k.
func BenchmarkHFEncode(b *testing.B) {
	sonnet := readSonnet(b)
	for _, tt := range []struct {
		builtin, pre string
		ignoreMerges bool
	}{
		{"r50k_base", preGPT2, false},
		{"cl100k_base", splitPreTokenizer(patternCL100K), true},
	} {
		b.Run(tt.builtin, func(b *testing.B) {
			spec := hfFromBuiltin(mustBuiltin(b, tt.builtin).(*bpeModel), tt.pre, tt.ignoreMerges)
			tk, err := parseTokenizerJSON("converted.json", spec.render())
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.SetBytes(int64(len(sonnet)))
			b.ResetTimer()
			for b.Loop() {
				if _, err := tk.Encode(ctx, sonnet); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPrompt1k is one 1,000-token random prompt built the way the
// random dataset does (decode random IDs) and counted again (encode);
// 10,000 prompts take 10,000 times this.
func BenchmarkPrompt1k(b *testing.B) {
	tk := mustBuiltin(b, "cl100k_base")
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(11, 12))
	special := tk.SpecialIDs()
	ids := make([]int, 0, 1000)
	for len(ids) < 1000 {
		id := rng.IntN(tk.VocabSize())
		if _, found := slices.BinarySearch(special, id); !found {
			ids = append(ids, id)
		}
	}
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := tk.Decode(ctx, ids); err != nil {
				b.Fatal(err)
			}
		}
	})
	text := mustDecode(b, tk, ids)
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if _, err := tk.Encode(ctx, text); err != nil {
				b.Fatal(err)
			}
		}
	})
	english := strings.Repeat("Shall I compare thee to a summer's day? ", 100)
	b.Run("encode-english", func(b *testing.B) {
		b.SetBytes(int64(len(english)))
		for b.Loop() {
			if _, err := tk.Encode(ctx, english); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBuiltinLoad is the one-time cost of parsing an embedded encoding.
func BenchmarkBuiltinLoad(b *testing.B) {
	for _, name := range []string{"r50k_base", "cl100k_base", "o200k_base"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := loadBuiltin(name, builtinEncodings[name]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
