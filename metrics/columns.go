package metrics

import (
	"encoding/binary"
	"math"
	"time"
)

// varintColumns holds a fixed number of int64 fields per row, each field
// in its own stream of zigzag varints, in chunks that never move once
// written. A simulated day of traffic has ten million rows: a field costs
// 1 byte when small (a zero queue time) and 4–5 bytes for a duration in
// nanoseconds, against 8 for an int64 and 16 for a slice grown by
// doubling, and every value stays exact. A stream per field lets the
// summary, which reads a column once per slice of its sorted keys, decode
// only the fields a metric needs.
type varintColumns struct {
	streams []varintStream
	rows    int
}

func newVarintColumns(fields int) varintColumns {
	return varintColumns{streams: make([]varintStream, fields)}
}

func (c *varintColumns) add(row ...int64) {
	for i, v := range row {
		c.streams[i].add(v)
	}
	c.rows++
}

// bytes is the columns' size.
func (c *varintColumns) bytes() int {
	n := 0
	for _, s := range c.streams {
		for _, chunk := range s.chunks {
			n += cap(chunk)
		}
	}
	return n
}

type varintStream struct {
	chunks [][]byte
}

// Chunks grow from 4 KiB to 1 MiB, so a short run's columns stay small
// and a long run's waste at most a chunk per field.
const (
	firstColumnChunk = 1 << 12
	columnChunk      = 1 << 20
)

func (s *varintStream) add(v int64) {
	n := len(s.chunks)
	if n == 0 || cap(s.chunks[n-1])-len(s.chunks[n-1]) < binary.MaxVarintLen64 {
		size := columnChunk
		if n < 8 {
			size = firstColumnChunk << n
		}
		s.chunks = append(s.chunks, make([]byte, 0, size))
		n++
	}
	s.chunks[n-1] = binary.AppendVarint(s.chunks[n-1], v)
}

func (s *varintStream) reader() varintReader { return varintReader{rest: s.chunks} }

// varintReader reads a stream's values in the order added; the caller
// reads no more values than were added.
type varintReader struct {
	cur  []byte
	rest [][]byte
}

func (r *varintReader) next() int64 {
	for len(r.cur) == 0 {
		r.cur, r.rest = r.rest[0], r.rest[1:]
	}
	v, k := binary.Varint(r.cur)
	r.cur = r.cur[k:]
	return v
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
