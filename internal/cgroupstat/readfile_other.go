//go:build !unix

package cgroupstat

import (
	"bytes"
	"os"
)

// ReadFile reads the file at p into buf's storage, grown as needed, and
// returns it; buf may be nil.
func ReadFile(p string, buf []byte) ([]byte, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return append(buf[:0], data...), nil
}
