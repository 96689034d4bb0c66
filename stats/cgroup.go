package stats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nodekit/nodekit/internal/cgroupstat"
)

// cgroupStats is what one read of a cgroup gives; nil fields were not
// available.
type cgroupStats struct {
	// cpu is the cumulative CPU time in nanoseconds.
	cpu *uint64
	// memory is set when the cgroup's memory usage was read.
	memory *cgroupMemory
	// stat is memory.stat, when read (also for the root cgroup, which has
	// no usage file on v2).
	stat map[string]uint64
	// swap is the swap usage, swapLimit its limit (nil: unlimited).
	swap, swapLimit *uint64
	// created is cadvisor's creation time: the oldest modification time
	// of the cgroup's directories and of their cgroup.events (v2) or
	// cgroup.clone_children (v1) files; zero if unknown.
	created time.Time
	// psi is the cgroup's pressure, CPU, memory and IO.
	psi pressure
}

// cgroupMemory is the memory figures cadvisor derives for a cgroup.
type cgroupMemory struct {
	usage, workingSet, rss, pageFaults, majorPageFaults uint64
	// limit is nil when unlimited.
	limit *uint64
}

// cgroupFS reads cgroup files below root, v1 or v2.
type cgroupFS struct {
	root string
	v2   bool
}

// detectCgroupFS recognises cgroup v2 by root/cgroup.controllers.
func detectCgroupFS(root string) cgroupFS {
	_, err := os.Stat(filepath.Join(root, "cgroup.controllers"))
	return cgroupFS{root: root, v2: err == nil}
}

// errNoCgroup is returned for a cgroup none of whose directories exist.
var errNoCgroup = errors.New("stats: cgroup not found")

// controllerDir is the directory of controller for cgroup path on v1 (the
// first of the mounts that exists), or the unified directory on v2.
func (c cgroupFS) controllerDir(controller, cgroup string) (string, bool) {
	if c.v2 {
		d := filepath.Join(c.root, cgroup)
		return d, dirExists(d)
	}
	mounts := []string{controller}
	if controller == "cpuacct" {
		mounts = []string{"cpuacct", "cpu,cpuacct", "cpuacct,cpu"}
	}
	for _, m := range mounts {
		if d := filepath.Join(c.root, m, cgroup); dirExists(d) {
			return d, true
		}
	}
	return "", false
}

// existingDir is controllerDir's directory when it exists, else "".
func (c cgroupFS) existingDir(controller, cgroup string) string {
	if d, ok := c.controllerDir(controller, cgroup); ok {
		return d
	}
	return ""
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// read reads a cgroup's CPU, memory, swap and pressure figures as cadvisor
// does; a missing file leaves its figure out (a missing pressure file is
// zeros). It fails only when the cgroup does not exist or a file holds
// garbage.
func (c cgroupFS) read(cgroup string) (cgroupStats, error) {
	var st cgroupStats
	cpuDir, memDir := c.existingDir("cpuacct", cgroup), c.existingDir("memory", cgroup)
	if cpuDir == "" && memDir == "" {
		return st, fmt.Errorf("%w: %s", errNoCgroup, cgroup)
	}
	var err error
	if cpuDir != "" {
		if st.cpu, err = c.readCPU(cpuDir); err != nil {
			return st, err
		}
	}
	if memDir != "" {
		if err = c.readMemory(memDir, cgroup == "/", &st); err != nil {
			return st, err
		}
	}
	if st.psi, err = c.pressureIn(cpuDir, memDir, c.existingDir("blkio", cgroup)); err != nil {
		return st, err
	}
	st.created = creationTime(c.v2, cpuDir, memDir)
	return st, nil
}

func (c cgroupFS) readCPU(dir string) (*uint64, error) {
	if !c.v2 {
		return optFileUint(filepath.Join(dir, "cpuacct.usage"))
	}
	stat, err := readKeyed(filepath.Join(dir, "cpu.stat"))
	if err != nil || stat == nil {
		return nil, err
	}
	usec, ok := stat["usage_usec"]
	if !ok {
		return nil, nil
	}
	ns := usec * uint64(time.Microsecond)
	return &ns, nil
}

// readMemory fills st.memory, st.stat and the swap figures. The usage is
// memory.current (v2) or memory.usage_in_bytes (v1), the working set the
// usage minus inactive file pages, RSS anon (v2) or total_rss (v1), the
// faults pgfault and pgmajfault.
func (c cgroupFS) readMemory(dir string, root bool, st *cgroupStats) error {
	usageFile, limitFile, inactive, rss := "memory.usage_in_bytes", "memory.limit_in_bytes", "total_inactive_file", "total_rss"
	if c.v2 {
		usageFile, limitFile, inactive, rss = "memory.current", "memory.max", "inactive_file", "anon"
	}
	stat, err := readKeyed(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return err
	}
	st.stat = stat
	usage, err := optFileUint(filepath.Join(dir, usageFile))
	if err != nil || usage == nil {
		return err // the v2 root has no memory.current
	}
	m := &cgroupMemory{usage: *usage, rss: stat[rss], pageFaults: stat["pgfault"], majorPageFaults: stat["pgmajfault"]}
	m.workingSet = m.usage - min(m.usage, stat[inactive])
	if !root {
		if m.limit, err = optLimit(filepath.Join(dir, limitFile)); err != nil {
			return err
		}
	}
	st.memory = m
	if c.v2 {
		if st.swap, err = optFileUint(filepath.Join(dir, "memory.swap.current")); err != nil {
			return err
		}
		if st.swap != nil && !root {
			st.swapLimit, err = optLimit(filepath.Join(dir, "memory.swap.max"))
		}
		return err
	}
	if v, ok := stat["total_swap"]; ok {
		st.swap = &v
		if !root {
			st.swapLimit, err = optLimit(filepath.Join(dir, "memory.memsw.limit_in_bytes"))
		}
	}
	return err
}

// creationTime is cadvisor's estimate of when a cgroup was created.
func creationTime(v2 bool, dirs ...string) time.Time {
	marker := "cgroup.clone_children"
	if v2 {
		marker = "cgroup.events"
	}
	var oldest time.Time
	for _, d := range dirs {
		if d == "" {
			continue
		}
		for _, p := range []string{d, filepath.Join(d, marker)} {
			if fi, err := os.Stat(p); err == nil && (oldest.IsZero() || fi.ModTime().Before(oldest)) {
				oldest = fi.ModTime()
			}
		}
	}
	return oldest
}

// unlimitedMemory is cadvisor's threshold above which a memory limit is
// "unlimited" (the kernel rounds the v1 maximum down from MaxInt64).
const unlimitedMemory = uint64(1 << 62)

// optLimit reads a memory limit file; "max" or a value above
// unlimitedMemory is nil, as is a missing file.
func optLimit(p string) (*uint64, error) {
	data, err := cgroupstat.ReadFile(p, nil)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stats: read %s: %w", p, err)
	}
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return nil, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("stats: %s: %w", p, err)
	}
	if v > unlimitedMemory {
		return nil, nil
	}
	return &v, nil
}

// optFileUint reads a file holding one unsigned integer; a missing file is
// nil.
func optFileUint(p string) (*uint64, error) {
	data, err := cgroupstat.ReadFile(p, nil)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stats: read %s: %w", p, err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("stats: %s: %w", p, err)
	}
	return &v, nil
}

// readKeyed reads a flat keyed file ("key value" lines, as memory.stat
// and cpu.stat); a missing file is nil. Values that do not parse are
// skipped.
func readKeyed(p string) (map[string]uint64, error) {
	data, err := cgroupstat.ReadFile(p, nil)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stats: read %s: %w", p, err)
	}
	out := make(map[string]uint64, 48)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out, nil
}
