//go:build !unix

package prober

import "syscall"

// lingerZero is nil where SO_LINGER cannot be set before connecting; dial
// sets it on the connected socket instead.
var lingerZero func(network, address string, c syscall.RawConn) error
