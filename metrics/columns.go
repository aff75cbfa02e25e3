package metrics

import (
	"encoding/binary"
	"math"
	"math/bits"
	"time"
)

// packedColumns holds a fixed number of int64 fields per row, each field
// in its own packedStream. A simulated day of traffic has ten million
// rows; a stream per field lets the summary, which reads a column once
// per range of its sorted keys, decode only the fields a metric needs.
type packedColumns struct {
	streams []packedStream
	rows    int
}

func newPackedColumns(fields int) packedColumns {
	return packedColumns{streams: make([]packedStream, fields)}
}

func (c *packedColumns) add(row ...int64) {
	for i, v := range row {
		c.streams[i].add(v)
	}
	c.rows++
}

// packedStream holds int64 values exactly, in blocks of packBlock values
// stored as the block's minimum and each value's offset from it in the
// fewest bits that hold the largest offset (frame of reference). A field
// that never changes (a zero queue time, a fixed output length) costs
// nothing but the block's header; a duration in nanoseconds costs the
// bits of its spread over 128 neighbouring requests (about 3 bytes for a
// TTFT) rather than of its size, against 4–5 bytes as a varint and 8 as
// an int64. Decoding a block is a shift and a mask a value, which the
// summary, reading each column several times, needs to be cheap.
type packedStream struct {
	// words holds the blocks' bits in chunks that never move once
	// written; a block takes 2×width words and never straddles chunks.
	words  [][]uint64
	mins   []int64
	widths []uint8
	tail   [packBlock]int64 // values not yet packed
	tailN  int
}

const packBlock = 128

// Chunks grow from 4 KiB to 1 MiB, so a short run's columns stay small
// and a long run's waste at most a chunk per field.
const (
	firstColumnChunk = 1 << 9 // words
	columnChunk      = 1 << 17
)

func (s *packedStream) add(v int64) {
	s.tail[s.tailN] = v
	if s.tailN++; s.tailN < packBlock {
		return
	}
	s.tailN = 0
	lo, hi := s.tail[0], s.tail[0]
	for _, v := range s.tail[1:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	width := bits.Len64(uint64(hi) - uint64(lo))
	s.mins = append(s.mins, lo)
	s.widths = append(s.widths, uint8(width))
	if width == 0 {
		return
	}
	n := len(s.words)
	if n == 0 || cap(s.words[n-1])-len(s.words[n-1]) < 2*width {
		size := columnChunk
		if n < 8 {
			size = firstColumnChunk << n
		}
		s.words = append(s.words, make([]uint64, 0, size))
		n++
	}
	chunk := s.words[n-1]
	at := len(chunk)
	chunk = chunk[:at+2*width]
	block := chunk[at:]
	clear(block)
	for i, v := range s.tail {
		d := uint64(v) - uint64(lo)
		bit := i * width
		word, shift := bit>>6, bit&63
		block[word] |= d << shift
		if shift+width > 64 {
			block[word+1] |= d >> (64 - shift)
		}
	}
	s.words[n-1] = chunk
}

func (s *packedStream) reader() packedReader { return packedReader{s: s} }

// packedReader reads a stream's values in the order added; the caller
// reads no more values than were added.
type packedReader struct {
	s          *packedStream
	block      int // next block to decode
	chunk, off int // where its words start
	buf        [packBlock]int64
	pos, n     int // buf[pos:n] is decoded but not yet read
}

// read fills dst with the next len(dst) values.
func (r *packedReader) read(dst []int64) {
	for len(dst) > 0 {
		switch {
		case r.pos < r.n:
			k := copy(dst, r.buf[r.pos:r.n])
			r.pos += k
			dst = dst[k:]
		case r.block == len(r.s.mins):
			r.pos, r.n = 0, copy(r.buf[:], r.s.tail[:r.s.tailN])
			r.block++
		case len(dst) >= packBlock:
			r.decode((*[packBlock]int64)(dst))
			dst = dst[packBlock:]
		default:
			r.decode(&r.buf)
			r.pos, r.n = 0, packBlock
		}
	}
}

// decode unpacks the next block into out.
func (r *packedReader) decode(out *[packBlock]int64) {
	lo, width := r.s.mins[r.block], int(r.s.widths[r.block])
	r.block++
	if width == 0 {
		for i := range out {
			out[i] = lo
		}
		return
	}
	if r.off+2*width > len(r.s.words[r.chunk]) {
		r.chunk, r.off = r.chunk+1, 0
	}
	block := r.s.words[r.chunk][r.off : r.off+2*width]
	r.off += 2 * width
	mask := uint64(1)<<width - 1
	if width == 64 {
		mask = math.MaxUint64
	}
	for i := range out {
		bit := i * width
		word, shift := bit>>6, bit&63
		d := block[word] >> shift
		if shift+width > 64 {
			d |= block[word+1] << (64 - shift)
		}
		out[i] = int64(uint64(lo) + d&mask)
	}
}

func nsToMS(ns int64) float64 { return ms(time.Duration(ns)) }

// floatKey orders non-negative floats as int64s (IEEE 754 bit patterns of
// non-negative numbers sort as the numbers do).
func floatKey(f float64) int64 { return int64(math.Float64bits(f)) }

func keyFloat(k int64) float64 { return math.Float64frombits(uint64(k)) }

// peakConcurrencySorted is the most requests in flight at once, from
// cursors over the sorted starts and ends (runs of equal instants): after
// the departures at an instant and then its arrivals (intervals are
// [start, end)), the number in flight is the starts so far less the ends
// so far.
func peakConcurrencySorted(starts, ends func() (v, n int64, ok bool)) int {
	var peak, in, out int64
	ev, en, eok := ends()
	for s, sn, sok := starts(); sok; s, sn, sok = starts() {
		for eok && ev <= s {
			out += en
			ev, en, eok = ends()
		}
		in += sn
		peak = max(peak, in-out)
	}
	return int(peak)
}

// runList is a multiset's sorted (value, count) runs, varint-encoded as
// the gap from the previous value and the count: 2–4 bytes a distinct
// value where a run struct takes 16. It is kept in fixed-size chunks from
// a chunkPool, and a merge returns each chunk it has read to the pool for
// the chunks it writes: a long run's merges then leave no garbage, and
// the heap stays near what is live instead of growing with the garbage
// collector's lag.
type runList struct {
	chunks   [][]byte
	distinct int
}

const runChunk = 1 << 16

// chunkPool holds a multiset's free runList chunks.
type chunkPool struct {
	free [][]byte
}

func (p *chunkPool) get() []byte {
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free = p.free[:n-1]
		return c[:0]
	}
	return make([]byte, 0, runChunk)
}

func (l *runList) append(pool *chunkPool, prev *int64, v, n int64) {
	k := len(l.chunks)
	if k == 0 || cap(l.chunks[k-1])-len(l.chunks[k-1]) < 2*binary.MaxVarintLen64 {
		l.chunks = append(l.chunks, pool.get())
		k++
	}
	c := binary.AppendUvarint(l.chunks[k-1], uint64(v)-uint64(*prev))
	l.chunks[k-1] = binary.AppendUvarint(c, uint64(n))
	*prev = v
	l.distinct++
}

// runReader reads a runList's runs in order; with release set it gives
// each chunk it has finished back to that pool (the list is then spent).
type runReader struct {
	chunks  [][]byte
	i, off  int
	v       int64
	release *chunkPool
}

func (l runList) reader(release *chunkPool) runReader {
	return runReader{chunks: l.chunks, v: math.MinInt64, release: release}
}

func (r *runReader) next() (v, n int64, ok bool) {
	for r.i < len(r.chunks) && r.off == len(r.chunks[r.i]) {
		if r.release != nil {
			r.release.free = append(r.release.free, r.chunks[r.i])
		}
		r.i, r.off = r.i+1, 0
	}
	if r.i == len(r.chunks) {
		return 0, 0, false
	}
	c := r.chunks[r.i][r.off:]
	gap, k := binary.Uvarint(c)
	count, k2 := binary.Uvarint(c[k:])
	r.off += k + k2
	r.v = int64(uint64(r.v) + gap)
	return r.v, int64(count), true
}

func (l runList) each(f func(v, n int64) bool) {
	r := l.reader(nil)
	for v, n, ok := r.next(); ok && f(v, n); v, n, ok = r.next() {
	}
}

// cursor returns a function yielding l's runs one at a time (ok false at the
// end), for merging.
func (l runList) cursor() func() (v, n int64, ok bool) {
	r := l.reader(nil)
	return r.next
}

// mergeRunLists merges a and b, which it spends: their chunks go back to
// pool as they are read, and the merged list's chunks come from it.
func mergeRunLists(a, b runList, pool *chunkPool) runList {
	var out runList
	prev := int64(math.MinInt64)
	ra, rb := a.reader(pool), b.reader(pool)
	av, an, aok := ra.next()
	bv, bn, bok := rb.next()
	for aok || bok {
		switch {
		case aok && (!bok || av < bv):
			out.append(pool, &prev, av, an)
			av, an, aok = ra.next()
		case bok && (!aok || bv < av):
			out.append(pool, &prev, bv, bn)
			bv, bn, bok = rb.next()
		default:
			out.append(pool, &prev, av, an+bn)
			av, an, aok = ra.next()
			bv, bn, bok = rb.next()
		}
	}
	return out
}
