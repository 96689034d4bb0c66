package cgroupstat

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Interface is one network interface's packet counters, from
// /proc/<pid>/net/dev.
type Interface struct {
	// Name is the interface's name ("eth0").
	Name string
	// RxPackets and RxDropped are the packets received and dropped on
	// receipt; TxPackets and TxDropped those transmitted and dropped on
	// transmission.
	RxPackets, RxDropped, TxPackets, TxDropped uint64
}

// ignoredInterfaces are the name prefixes cadvisor leaves out of a
// container's network (loopback, the host side of veth pairs, bridges).
var ignoredInterfaces = [...]string{"lo", "veth", "docker", "nerdctl"}

// Network reads the interfaces of the network namespace of process pid,
// without those cadvisor ignores ("lo", "veth*", "docker*", "nerdctl*").
// A malformed line fails the whole read, as cadvisor.
func (r *Reader) Network(pid int) ([]Interface, error) {
	data, err := r.readFile(r.m.proc+"/"+strconv.Itoa(pid)+"/net", "dev")
	if err != nil {
		return nil, err
	}
	return parseNetDev(data)
}

// parseNetDev parses /proc/net/dev: two header lines, then
// "name: rx bytes packets errs drop fifo frame compressed multicast
// tx bytes packets errs drop fifo colls carrier compressed".
func parseNetDev(data []byte) ([]Interface, error) {
	var out []Interface
	for i := 0; len(data) > 0; i++ {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		if i < 2 || len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		name, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return nil, fmt.Errorf("cgroupstat: invalid interface stats line %q", line)
		}
		name = bytes.TrimSpace(name)
		var fields [16][]byte
		n := 0
		for f := range bytes.FieldsSeq(rest) {
			if n == len(fields) {
				n++
				break
			}
			fields[n] = f
			n++
		}
		if n != len(fields) {
			return nil, fmt.Errorf("cgroupstat: invalid interface stats line %q", line)
		}
		if ignoredInterface(name) {
			continue
		}
		in := Interface{Name: string(name)}
		var err error
		for _, v := range []struct {
			field int
			dst   *uint64
		}{{1, &in.RxPackets}, {3, &in.RxDropped}, {9, &in.TxPackets}, {11, &in.TxDropped}} {
			if *v.dst, err = strconv.ParseUint(string(fields[v.field]), 10, 64); err != nil {
				return nil, fmt.Errorf("cgroupstat: interface stats line %q: %w", line, err)
			}
		}
		out = append(out, in)
	}
	return out, nil
}

func ignoredInterface(name []byte) bool {
	for _, p := range ignoredInterfaces {
		if len(name) >= len(p) && strings.EqualFold(string(name[:len(p)]), p) {
			return true
		}
	}
	return false
}
