package userns

import "math/bits"

// slots is a bitmap of the ranges a Manager hands out, with a next-fit
// cursor: allocation takes the first free slot at or after the one
// following the last allocation, wrapping around, so a released range is
// reused as late as possible and the choice is deterministic.
type slots struct {
	words []uint64 // bit i set: slot i in use; bits past n are always set
	n     int      // number of slots
	used  int      // slots in use
	next  int      // where the next search starts
}

func newSlots(n int) slots {
	s := slots{words: make([]uint64, (n+63)/64), n: n}
	if tail := n % 64; tail != 0 {
		s.words[len(s.words)-1] = ^uint64(0) << tail
	}
	return s
}

// has says whether slot i is in use; a slot out of range counts as used.
func (s *slots) has(i int) bool {
	if i < 0 || i >= s.n {
		return true
	}
	return s.words[i/64]&(1<<(i%64)) != 0
}

// set marks slot i (in range) used.
func (s *slots) set(i int) {
	if !s.has(i) {
		s.words[i/64] |= 1 << (i % 64)
		s.used++
	}
}

// clear marks slot i (in range) free.
func (s *slots) clear(i int) {
	if i >= 0 && i < s.n && s.has(i) {
		s.words[i/64] &^= 1 << (i % 64)
		s.used--
	}
}

// allocate takes the next free slot; false when all are in use.
func (s *slots) allocate() (int, bool) {
	if s.used >= s.n {
		return 0, false
	}
	start := s.next
	if start >= s.n {
		start = 0
	}
	w := start / 64
	mask := ^uint64(0) << (start % 64)
	// One pass over every word, plus the start word again for the slots
	// before start.
	for range len(s.words) + 1 {
		if free := ^s.words[w] & mask; free != 0 {
			i := w*64 + bits.TrailingZeros64(free)
			s.set(i)
			s.next = i + 1
			return i, true
		}
		mask = ^uint64(0)
		if w++; w == len(s.words) {
			w = 0
		}
	}
	return 0, false
}
