package engine

import (
	"testing"
	"unsafe"
)

// TestHotLayout guards the sizes the per-token loops were tuned for: a
// sequence's per-decode fields in its first cache line, a 192-byte
// sequence (a size class whose objects start on a line) and half-line step
// entries. Moving a field is free to do; this says what it costs.
func TestHotLayout(t *testing.T) {
	var s sequence
	tests := []struct {
		name      string
		got, want uintptr
	}{
		{"sequence size", unsafe.Sizeof(s), 192},
		{"end of the hot line", unsafe.Offsetof(s.gpuBlocks) + unsafe.Sizeof(s.gpuBlocks), 64},
		{"entry size", unsafe.Sizeof(entry{}), 32},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %d bytes, want %d", tt.name, tt.got, tt.want)
		}
	}
}
