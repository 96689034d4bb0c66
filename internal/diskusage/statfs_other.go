//go:build !linux

package diskusage

import "errors"

// Statfs fails off Linux.
func Statfs(string) (Fs, error) {
	return Fs{}, errors.New("diskusage: statfs needs Linux")
}
