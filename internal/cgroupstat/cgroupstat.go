package cgroupstat

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// Defaults of NewMount.
const (
	// DefaultRoot is where cgroups are mounted on a systemd host.
	DefaultRoot = "/sys/fs/cgroup"
	// DefaultProc is where procfs is mounted.
	DefaultProc = "/proc"
)

// clockTicks is USER_HZ, the unit of cpuacct.stat, as the cgroup library
// cadvisor reads it with assumes.
const clockTicks = 100

// Mount is a cgroup mount and a procfs mount. It is safe for concurrent
// use; its Readers are not.
type Mount struct {
	root, proc string

	once sync.Once
	v2   bool
	psi  bool
}

// NewMount returns the mount at root (DefaultRoot if empty) with procfs at
// proc (DefaultProc if empty). It does no I/O: the hierarchy is looked at
// on the first Reader.
func NewMount(root, proc string) *Mount {
	if root == "" {
		root = DefaultRoot
	}
	if proc == "" {
		proc = DefaultProc
	}
	return &Mount{root: root, proc: proc}
}

// Unified reports whether the mount is the unified (v2) hierarchy: its
// root has cgroup.controllers.
func (m *Mount) Unified() bool {
	m.probe()
	return m.v2
}

// PSI reports whether the host keeps pressure stall information: the
// unified root has cpu.pressure (cadvisor's check before it serves any
// container_pressure_* family).
func (m *Mount) PSI() bool {
	m.probe()
	return m.psi
}

func (m *Mount) probe() {
	m.once.Do(func() {
		_, err := os.Stat(filepath.Join(m.root, "cgroup.controllers"))
		m.v2 = err == nil
		_, err = os.Stat(filepath.Join(m.root, "cpu.pressure"))
		m.psi = m.v2 && err == nil
	})
}

// Reader returns a reader for one goroutine, with its own buffer.
func (m *Mount) Reader() *Reader {
	return &Reader{m: m, v2: m.Unified(), buf: make([]byte, 0, 4096)}
}

// Stats are one cgroup's figures. A HasX flag is false when its file could
// not be read; the figures under it are then zero.
type Stats struct {
	// HasMemory: memory.stat was read.
	HasMemory bool
	// Cache is the page cache in bytes (v1 "total_cache" or "cache", v2
	// "file"); MappedFile the mapped files (v1 "total_mapped_file" or
	// "mapped_file", v2 "file_mapped").
	Cache, MappedFile uint64

	// HasCPUUsage: cpuacct.stat (v1) or cpu.stat (v2) was read.
	HasCPUUsage bool
	// UserNanos and SystemNanos are the CPU time in user and kernel mode,
	// in nanoseconds.
	UserNanos, SystemNanos uint64

	// HasThrottling: cpu.stat was read and has nr_periods (the cpu
	// controller is enabled for the cgroup).
	HasThrottling bool
	// Periods and ThrottledPeriods are cpu.stat's nr_periods and
	// nr_throttled; ThrottledNanos the throttled time in nanoseconds
	// (v1 throttled_time, v2 throttled_usec × 1000).
	Periods, ThrottledPeriods, ThrottledNanos uint64

	// HasCPUSpec: the cgroup has the cpu controller (HasThrottling, or
	// v1's cpu.shares was read). A limit file missing under it reads 0,
	// as cadvisor.
	HasCPUSpec bool
	// Quota and Period are the CFS quota and period in microseconds
	// (v1 cpu.cfs_quota_us and cpu.cfs_period_us, v2 cpu.max); Quota is 0
	// without a quota (-1 or "max").
	Quota, Period uint64
	// Shares is v1 cpu.shares, or v2 cpu.weight converted as cadvisor
	// does (2 + (weight−1) × 262142 / 9999; 0 if out of range).
	Shares uint64

	// HasMemoryLimit: v1 memory.limit_in_bytes or v2 memory.max was read.
	HasMemoryLimit bool
	// MemoryLimit is the limit in bytes, math.MaxUint64 for v2's "max".
	MemoryLimit uint64
}

// Reader reads cgroups and network namespaces under its Mount. It is not
// safe for concurrent use.
type Reader struct {
	m   *Mount
	v2  bool
	buf []byte
}

// Read reads the cgroup name ("/", "/kubepods/burstable/pod<uid>", …).
// Files that cannot be read leave their figures out; it never fails.
func (r *Reader) Read(name string) Stats {
	var s Stats
	if r.v2 {
		r.readV2(r.path("", name), &s)
	} else {
		r.readV1(name, &s)
	}
	return s
}

// path is the directory of name in the controller's hierarchy (v1) or
// the unified one (controller "").
func (r *Reader) path(controller, name string) string {
	return filepath.Join(r.m.root, controller, name)
}

func (r *Reader) readV2(dir string, s *Stats) {
	if data, err := r.readFile(dir, "memory.stat"); err == nil {
		s.HasMemory = true
		s.Cache, _ = lookup(data, "file")
		s.MappedFile, _ = lookup(data, "file_mapped")
	}
	if data, err := r.readFile(dir, "cpu.stat"); err == nil {
		s.HasCPUUsage = true
		user, _ := lookup(data, "user_usec")
		system, _ := lookup(data, "system_usec")
		s.UserNanos, s.SystemNanos = user*1000, system*1000
		s.Periods, s.HasThrottling = lookup(data, "nr_periods")
		s.ThrottledPeriods, _ = lookup(data, "nr_throttled")
		throttled, _ := lookup(data, "throttled_usec")
		s.ThrottledNanos = throttled * 1000
	}
	if s.HasThrottling {
		s.HasCPUSpec = true
		if data, err := r.readFile(dir, "cpu.max"); err == nil {
			quota, period, _ := bytes.Cut(bytes.TrimSpace(data), []byte(" "))
			if string(quota) != "max" {
				s.Quota = parseUint(quota)
			}
			s.Period = parseUint(period)
		}
		if data, err := r.readFile(dir, "cpu.weight"); err == nil {
			if w := parseUint(bytes.TrimSpace(data)); w >= 1 && w <= 10000 {
				s.Shares = 2 + ((w-1)*262142)/9999
			}
		}
	}
	if data, err := r.readFile(dir, "memory.max"); err == nil {
		s.HasMemoryLimit, s.MemoryLimit = true, parseLimit(data)
	}
}

func (r *Reader) readV1(name string, s *Stats) {
	mem := r.path("memory", name)
	// memory.use_hierarchy first: each read reuses the buffer.
	cache, mapped := "cache", "mapped_file"
	if h, err := r.readFile(mem, "memory.use_hierarchy"); err == nil && string(bytes.TrimSpace(h)) == "1" {
		cache, mapped = "total_cache", "total_mapped_file"
	}
	if data, err := r.readFile(mem, "memory.stat"); err == nil {
		s.HasMemory = true
		s.Cache, _ = lookup(data, cache)
		s.MappedFile, _ = lookup(data, mapped)
		if data, err := r.readFile(mem, "memory.limit_in_bytes"); err == nil {
			s.HasMemoryLimit, s.MemoryLimit = true, parseLimit(data)
		}
	}
	if data, err := r.readFile(r.path("cpuacct", name), "cpuacct.stat"); err == nil {
		user, okU := lookup(data, "user")
		system, okS := lookup(data, "system")
		if okU && okS {
			s.HasCPUUsage = true
			s.UserNanos, s.SystemNanos = user*1e9/clockTicks, system*1e9/clockTicks
		}
	}
	cpu := r.path("cpu", name)
	if data, err := r.readFile(cpu, "cpu.stat"); err == nil {
		s.Periods, s.HasThrottling = lookup(data, "nr_periods")
		s.ThrottledPeriods, _ = lookup(data, "nr_throttled")
		s.ThrottledNanos, _ = lookup(data, "throttled_time")
	}
	if data, err := r.readFile(cpu, "cpu.shares"); err == nil || s.HasThrottling {
		s.HasCPUSpec = true
		s.Shares = parseUint(bytes.TrimSpace(data))
		if data, err := r.readFile(cpu, "cpu.cfs_period_us"); err == nil {
			s.Period = parseUint(bytes.TrimSpace(data))
		}
		if data, err := r.readFile(cpu, "cpu.cfs_quota_us"); err == nil {
			if q := bytes.TrimSpace(data); string(q) != "-1" {
				s.Quota = parseUint(q)
			}
		}
	}
}

// readFile reads dir/file into the reader's buffer, valid until the next
// read.
func (r *Reader) readFile(dir, file string) ([]byte, error) {
	data, err := ReadFile(dir+"/"+file, r.buf)
	if cap(data) > cap(r.buf) {
		r.buf = data[:0]
	}
	return data, err
}

// lookup finds the value of key in "key value" lines.
func lookup(data []byte, key string) (uint64, bool) {
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		k, v, ok := bytes.Cut(line, []byte(" "))
		if ok && string(k) == key {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// parseUint parses a decimal, 0 if it is not one (cadvisor's readUInt64).
func parseUint(b []byte) uint64 {
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// parseLimit parses a memory limit, "max" as math.MaxUint64.
func parseLimit(data []byte) uint64 {
	v := bytes.TrimSpace(data)
	if string(v) == "max" {
		return math.MaxUint64
	}
	return parseUint(v)
}

// errNoProcess: a cgroup and its children hold no process.
var errNoProcess = errors.New("cgroupstat: no process in the cgroup")

// PID returns a process of the cgroup name, or of one of its child cgroups
// (a pod's cgroup holds its processes in its containers' cgroups).
func (r *Reader) PID(name string) (int, error) {
	dir := r.path("", name)
	if !r.v2 {
		dir = r.path("memory", name)
	}
	if pid, err := r.firstPID(dir); err == nil || !errors.Is(err, errNoProcess) {
		return pid, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if pid, err := r.firstPID(dir + "/" + e.Name()); err == nil {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("%w %s", errNoProcess, name)
}

// firstPID is the first process in dir's cgroup.procs.
func (r *Reader) firstPID(dir string) (int, error) {
	data, err := r.readFile(dir, "cgroup.procs")
	if err != nil {
		return 0, err
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	if len(line) == 0 {
		return 0, errNoProcess
	}
	pid, err := strconv.Atoi(string(line))
	if err != nil {
		return 0, fmt.Errorf("cgroupstat: %s/cgroup.procs: %w", dir, err)
	}
	return pid, nil
}
