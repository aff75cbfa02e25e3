package engine

// seqIndex finds a request's sequence by its ID. Drivers hand IDs out in
// order (the simulator counts from 0, serve from 1), so most IDs land in a
// window of consecutive IDs, found by subtraction instead of a hash-map
// probe (a map of a burst's 100,000 waiting requests missed the cache on
// every insert and delete); IDs out of order go to a map.
type seqIndex struct {
	window []*sequence // window[i] holds ID base+i-head, nil if absent
	head   int         // window[:head] is spent
	base   uint64      // ID of window[head]
	others map[uint64]*sequence
	n      int
}

// windowGap is how far past the window's end an ID may land and still
// join it, so drivers that skip a few IDs (a topology's instances each see
// every k-th) stay in the window.
const windowGap = 1024

func (x *seqIndex) len() int { return x.n }

// slot is the window slot of id, or nil when id is outside the window.
func (x *seqIndex) slot(id uint64) **sequence {
	if off := id - x.base; id >= x.base && off < uint64(len(x.window)-x.head) {
		return &x.window[x.head+int(off)]
	}
	return nil
}

func (x *seqIndex) get(id uint64) *sequence {
	if p := x.slot(id); p != nil {
		return *p
	}
	return x.others[id]
}

// put indexes s under id, which must be absent.
func (x *seqIndex) put(id uint64, s *sequence) {
	x.n++
	if x.head == len(x.window) {
		x.window, x.head, x.base = x.window[:0], 0, id
	}
	if p := x.slot(id); p != nil {
		*p = s
		return
	}
	end := x.base + uint64(len(x.window)-x.head)
	if id < x.base || id-end > windowGap {
		x.putOther(id, s)
		return
	}
	if len(x.window)-x.head > 2*x.n+4*windowGap {
		// Mostly holes: a request that stays in flight keeps the window
		// from sliding. Its survivors move to the map.
		for i, old := range x.window[x.head:] {
			if old != nil {
				x.putOther(x.base+uint64(i), old)
			}
		}
		clear(x.window)
		x.window, x.head, x.base = x.window[:0], 0, id
	}
	if x.head > 0 && len(x.window) == cap(x.window) && x.head >= len(x.window)/2 {
		// Slide the window down instead of growing the array.
		n := copy(x.window, x.window[x.head:])
		clear(x.window[n:])
		x.window, x.head = x.window[:n], 0
	}
	for end := x.base + uint64(len(x.window)-x.head); end < id; end++ {
		x.window = append(x.window, nil)
	}
	x.window = append(x.window, s)
}

func (x *seqIndex) putOther(id uint64, s *sequence) {
	if x.others == nil {
		x.others = make(map[uint64]*sequence)
	}
	x.others[id] = s
}

func (x *seqIndex) del(id uint64) {
	p := x.slot(id)
	if p == nil {
		if _, ok := x.others[id]; ok {
			delete(x.others, id)
			x.n--
		}
		return
	}
	if *p == nil {
		return
	}
	*p = nil
	x.n--
	for x.head < len(x.window) && x.window[x.head] == nil {
		x.head++
		x.base++
	}
}

// all appends every indexed sequence to dst.
func (x *seqIndex) all(dst []*sequence) []*sequence {
	for _, s := range x.window[x.head:] {
		if s != nil {
			dst = append(dst, s)
		}
	}
	for _, s := range x.others {
		dst = append(dst, s)
	}
	return dst
}
