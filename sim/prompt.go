package sim

// DerivePromptIDs makes deterministic stand-in token IDs for a prompt text
// when no tokenizer's IDs are at hand, so that prompts sharing a text prefix
// share an ID prefix and hit the simulated prefix cache.
//
// The text is cut into pieces the way BPE pre-tokenizers cut English, with
// boundaries decided by the content alone (never by the text's length, which
// would shift every boundary of a shared prefix): a letter/digit run with
// its one leading space, split every maxPiece bytes (≈4 bytes per token, a
// typical BPE rate for English); a run of other whitespace; or any other
// single byte. Each piece's ID is a hash of its bytes. When n > 0 the result
// has exactly n IDs (the dataset's intended prompt length): cut after n
// pieces, or padded with IDs derived from the whole text, so the shared
// prefix keeps its IDs and only the tail differs. n <= 0 returns one ID per
// piece.
func DerivePromptIDs(text string, n int) []int32 {
	capacity := n
	if capacity <= 0 {
		capacity = len(text)/4 + 1
	}
	ids := make([]int32, 0, capacity)
	for i := 0; i < len(text) && (n <= 0 || len(ids) < n); {
		start := i
		switch {
		case text[i] == ' ' && i+1 < len(text) && isWordByte(text[i+1]):
			i++
			for i < len(text) && isWordByte(text[i]) && i-start < maxPiece {
				i++
			}
		case isWordByte(text[i]):
			for i < len(text) && isWordByte(text[i]) && i-start < maxPiece {
				i++
			}
		case isSpaceByte(text[i]):
			for i < len(text) && isSpaceByte(text[i]) && i-start < maxPiece {
				i++
			}
		default:
			i++
		}
		ids = append(ids, pieceID(fnv1a(fnvOffset, text[start:i])))
	}
	if n > 0 && len(ids) < n {
		h := fnv1a(fnvOffset, text)
		for len(ids) < n {
			h = fnv1a(h^uint64(len(ids)), "\x00pad")
			ids = append(ids, pieceID(h))
		}
	}
	return ids
}

const (
	maxPiece  = 5
	fnvOffset = 0xcbf29ce484222325
	fnvPrime  = 0x100000001b3
)

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80 || c == '_' || c == '\''
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

func fnv1a(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// pieceID folds a hash into a non-negative ID below 2³¹, like a vocabulary
// index (only equality matters).
func pieceID(h uint64) int32 { return int32((h ^ h>>31) & (1<<31 - 1)) }
