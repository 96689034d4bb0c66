package apiserver

import (
	"io"
	"sync"
)

// ring is an io.Writer that keeps the most recent bytes written to it, so the
// harness can silence the apiserver yet show its output when a test fails.
type ring struct {
	mu    sync.Mutex
	buf   []byte
	start int
	full  bool
	tee   io.Writer
}

func newRing(size int) *ring { return &ring{buf: make([]byte, size)} }

// Write implements io.Writer; it never fails.
func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tee != nil {
		_, _ = r.tee.Write(p)
	}
	n := len(p)
	if len(p) >= len(r.buf) {
		copy(r.buf, p[len(p)-len(r.buf):])
		r.start, r.full = 0, true
		return n, nil
	}
	for len(p) > 0 {
		c := copy(r.buf[r.start:], p)
		p = p[c:]
		r.start += c
		if r.start == len(r.buf) {
			r.start, r.full = 0, true
		}
	}
	return n, nil
}

// Bytes returns a copy of what the ring holds, oldest first.
func (r *ring) Bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]byte(nil), r.buf[:r.start]...)
	}
	out := make([]byte, 0, len(r.buf))
	out = append(out, r.buf[r.start:]...)
	return append(out, r.buf[:r.start]...)
}
