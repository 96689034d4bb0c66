package virtualnode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// refCoder writes a byte string as its differences from a reference
// string: runs of literal bytes and copies of the reference's ranges. The
// pod cache codes each pod's encoding against the first pod it encoded, so
// pods of one shape (one template, defaults filled in by the API server)
// keep only what differs (times, addresses, IDs): the pods of make
// bench-cluster code to 75 of their 344 bytes (BenchmarkPodCacheTransform).
//
// The ops, one after the other: uvarint(n<<1) and n literal bytes, or
// uvarint(n<<1|1) and uvarint(offset): n bytes of the reference from
// offset.
type refCoder struct {
	ref  string
	bufs sync.Pool // of *[]byte: scratch for encodings
	// index lists, for each 4-byte sequence of ref, where it starts (the
	// first few places).
	index map[uint32][]int32
}

const (
	// minCopy is the shortest copy: a shorter match costs as much as its
	// bytes.
	minCopy = 4
	// maxCandidates bounds the places kept per 4-byte sequence.
	maxCandidates = 8
)

var errBadRefCode = errors.New("virtualnode: corrupt coded encoding")

func newRefCoder(ref []byte) *refCoder {
	c := &refCoder{ref: string(ref), index: map[uint32][]int32{}}
	for i := 0; i+minCopy <= len(ref); i++ {
		k := binary.LittleEndian.Uint32(ref[i:])
		if len(c.index[k]) < maxCandidates {
			c.index[k] = append(c.index[k], int32(i))
		}
	}
	return c
}

// buffer returns a scratch buffer; release gives it back.
func (c *refCoder) buffer() *[]byte {
	if b, ok := c.bufs.Get().(*[]byte); ok {
		return b
	}
	return new([]byte)
}

// release returns a buffer from buffer, unless it grew large.
func (c *refCoder) release(b *[]byte) {
	if cap(*b) <= 64<<10 {
		c.bufs.Put(b)
	}
}

// encode appends the ops that rebuild src to dst.
func (c *refCoder) encode(dst, src []byte) []byte {
	lit, i := 0, 0 // src[lit:i] is the literal run pending
	for i+minCopy <= len(src) {
		at, n := 0, 0
		for _, p := range c.index[binary.LittleEndian.Uint32(src[i:])] {
			if m := commonPrefix(c.ref[p:], src[i:]); m > n {
				at, n = int(p), m
			}
		}
		if n < minCopy {
			i++
			continue
		}
		dst = appendLiteral(dst, src[lit:i])
		dst = binary.AppendUvarint(dst, uint64(n)<<1|1)
		dst = binary.AppendUvarint(dst, uint64(at))
		i += n
		lit = i
	}
	return appendLiteral(dst, src[lit:])
}

func appendLiteral(dst, b []byte) []byte {
	if len(b) == 0 {
		return dst
	}
	dst = binary.AppendUvarint(dst, uint64(len(b))<<1)
	return append(dst, b...)
}

func commonPrefix(a string, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// decode appends the bytes ops rebuild to dst, growing it once.
func (c *refCoder) decode(dst []byte, ops string) ([]byte, error) {
	if n, ok := c.decodedLen(ops); ok && cap(dst)-len(dst) < n {
		dst = slices.Grow(dst, n)
	}
	for len(ops) > 0 {
		v, rest, ok := uvarint(ops)
		if !ok {
			return nil, errBadRefCode
		}
		n := v >> 1
		if v&1 == 0 {
			if n > uint64(len(rest)) {
				return nil, errBadRefCode
			}
			dst = append(dst, rest[:n]...)
			ops = rest[n:]
			continue
		}
		at, rest, ok := uvarint(rest)
		if !ok || at > uint64(len(c.ref)) || n > uint64(len(c.ref))-at {
			return nil, errBadRefCode
		}
		dst = append(dst, c.ref[at:at+n]...)
		ops = rest
	}
	return dst, nil
}

// decodedLen is how many bytes ops rebuild, or false if they are not well
// formed (decode then finds the error).
func (c *refCoder) decodedLen(ops string) (int, bool) {
	n := 0
	for len(ops) > 0 {
		v, rest, ok := uvarint(ops)
		if !ok {
			return 0, false
		}
		run := v >> 1
		if v&1 == 0 { // literal bytes follow
			if run > uint64(len(rest)) {
				return 0, false
			}
			ops = rest[run:]
		} else { // a range of the reference
			if run > uint64(len(c.ref)) {
				return 0, false
			}
			if _, ops, ok = uvarint(rest); !ok {
				return 0, false
			}
		}
		n += int(run)
	}
	return n, true
}

// uvarint reads a uvarint from the start of s.
func uvarint(s string) (uint64, string, bool) {
	var v uint64
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		b := s[i]
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, s[i+1:], true
		}
	}
	return 0, "", false
}

// nodeCodec keeps the last-known Node of each of an agent's nodes
// (nodestatus.Codec) coded against the first one it was given: the nodes of
// an agent differ in their names, addresses, IDs and times.
type nodeCodec struct {
	coder atomic.Pointer[refCoder]
}

// Encode implements nodestatus.Codec.
func (c *nodeCodec) Encode(raw []byte) ([]byte, error) {
	coder := c.coder.Load()
	if coder == nil {
		c.coder.CompareAndSwap(nil, newRefCoder(raw))
		coder = c.coder.Load()
	}
	ops := coder.buffer()
	defer coder.release(ops)
	*ops = coder.encode((*ops)[:0], raw)
	return bytes.Clone(*ops), nil
}

// Decode implements nodestatus.Codec.
func (c *nodeCodec) Decode(dst, kept []byte) ([]byte, error) {
	coder := c.coder.Load()
	if coder == nil {
		return nil, errBadRefCode
	}
	// The ops are only read, while kept cannot change: no copy.
	return coder.decode(dst, unsafe.String(unsafe.SliceData(kept), len(kept)))
}
