package engine

// seqQueue is a ring-buffer deque of sequences (vLLM's collections.deque).
type seqQueue struct {
	buf  []*sequence // len is zero or a power of two
	head int
	n    int
}

func (q *seqQueue) len() int { return q.n }

func (q *seqQueue) at(i int) *sequence { return q.buf[(q.head+i)&(len(q.buf)-1)] }

func (q *seqQueue) grow() {
	size := len(q.buf) * 2
	if size == 0 {
		size = 16
	}
	buf := make([]*sequence, size)
	for i := 0; i < q.n; i++ {
		buf[i] = q.at(i)
	}
	q.buf, q.head = buf, 0
}

func (q *seqQueue) pushBack(s *sequence) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = s
	q.n++
}

func (q *seqQueue) pushFront(s *sequence) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.head = (q.head - 1) & (len(q.buf) - 1)
	q.buf[q.head] = s
	q.n++
}

func (q *seqQueue) front() *sequence { return q.buf[q.head] }

func (q *seqQueue) popFront() *sequence {
	s := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return s
}

func (q *seqQueue) popBack() *sequence {
	i := (q.head + q.n - 1) & (len(q.buf) - 1)
	s := q.buf[i]
	q.buf[i] = nil
	q.n--
	return s
}

// appendAll pushes ss at the back, in order.
func (q *seqQueue) appendAll(ss []*sequence) {
	for _, s := range ss {
		q.pushBack(s)
	}
}

// prependAll is deque.extendleft: each element goes to the front in turn,
// so the last of ss ends up first.
func (q *seqQueue) prependAll(ss []*sequence) {
	for _, s := range ss {
		q.pushFront(s)
	}
}

// removeFunc drops the sequences for which drop is true, keeping the order
// of the others. O(len).
func (q *seqQueue) removeFunc(drop func(*sequence) bool) int {
	kept := 0
	for i := 0; i < q.n; i++ {
		s := q.at(i)
		if drop(s) {
			continue
		}
		q.buf[(q.head+kept)&(len(q.buf)-1)] = s
		kept++
	}
	for i := kept; i < q.n; i++ {
		q.buf[(q.head+i)&(len(q.buf)-1)] = nil
	}
	removed := q.n - kept
	q.n = kept
	return removed
}
