package kubeletapi

// lineRing is a queue of log lines in a circular buffer that doubles when
// full, so that dropping the oldest line and appending a new one copies
// nothing.
type lineRing struct {
	buf  []logLine
	head int // index of the oldest line
	n    int
}

func (r *lineRing) len() int { return r.n }

// push appends l as the newest line.
func (r *lineRing) push(l logLine) {
	if r.n == len(r.buf) {
		grown := r.appendRange(make([]logLine, 0, max(16, 2*len(r.buf))), 0, r.n)
		r.buf, r.head = grown[:cap(grown)], 0
	}
	r.buf[(r.head+r.n)%len(r.buf)] = l
	r.n++
}

// pop removes and returns the oldest line; the ring must not be empty.
func (r *lineRing) pop() logLine {
	l := r.buf[r.head]
	r.buf[r.head] = logLine{} // release the text
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return l
}

// appendRange appends to dst the lines from index from to index to
// (exclusive), 0 being the oldest, and returns it.
func (r *lineRing) appendRange(dst []logLine, from, to int) []logLine {
	for from < to {
		i := (r.head + from) % len(r.buf)
		end := min(len(r.buf), i+to-from)
		dst = append(dst, r.buf[i:end]...)
		from += end - i
	}
	return dst
}
