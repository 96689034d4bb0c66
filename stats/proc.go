package stats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nodekit/nodekit/internal/cgroupstat"
)

// meminfo is what the provider uses of /proc/meminfo, in bytes.
type meminfo struct {
	total, available, free uint64
	// swapTotal and swapFree; hasSwap when the SwapTotal line is present.
	swapTotal, swapFree uint64
	hasSwap             bool
}

// readMeminfo reads MemTotal, MemAvailable, MemFree, SwapTotal and
// SwapFree.
func readMeminfo(procPath string) (meminfo, error) {
	p := filepath.Join(procPath, "meminfo")
	data, err := cgroupstat.ReadFile(p, nil)
	if err != nil {
		return meminfo{}, fmt.Errorf("stats: read %s: %w", p, err)
	}
	var m meminfo
	fields := map[string]*uint64{"MemTotal:": &m.total, "MemAvailable:": &m.available, "MemFree:": &m.free,
		"SwapTotal:": &m.swapTotal, "SwapFree:": &m.swapFree}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for found := 0; found < len(fields) && sc.Scan(); {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		dst, ok := fields[f[0]]
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return meminfo{}, fmt.Errorf("stats: %s: %s: %w", p, f[0], err)
		}
		*dst = v * 1024
		found++
		if f[0] == "SwapTotal:" {
			m.hasSwap = true
		}
	}
	if m.total == 0 || m.available > m.total {
		return meminfo{}, fmt.Errorf("stats: %s: no usable MemTotal/MemAvailable", p)
	}
	m.swapFree = min(m.swapFree, m.swapTotal)
	return m, nil
}

// procStat is what the provider uses of /proc/stat.
type procStat struct {
	// cpu is the cumulative CPU time of all CPUs in nanoseconds: user,
	// nice, system, irq, softirq and steal (guest time is part of user).
	cpu uint64
	// bootTime is the btime line.
	bootTime time.Time
}

// userHZ is the unit of /proc/stat CPU times (USER_HZ is 100 on every
// Linux architecture the kubelet supports).
const userHZ = 100

func readProcStat(procPath string) (procStat, error) {
	p := filepath.Join(procPath, "stat")
	data, err := cgroupstat.ReadFile(p, nil)
	if err != nil {
		return procStat{}, fmt.Errorf("stats: read %s: %w", p, err)
	}
	var st procStat
	var haveCPU, haveBoot bool
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 9 && f[0] == "cpu":
			var ticks uint64
			for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
				v, err := strconv.ParseUint(f[i], 10, 64)
				if err != nil {
					return procStat{}, fmt.Errorf("stats: %s: cpu: %w", p, err)
				}
				ticks += v
			}
			st.cpu = ticks * uint64(time.Second/userHZ)
			haveCPU = true
		case len(f) == 2 && f[0] == "btime":
			v, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return procStat{}, fmt.Errorf("stats: %s: btime: %w", p, err)
			}
			st.bootTime = time.Unix(v, 0)
			haveBoot = true
		}
		if haveCPU && haveBoot {
			break
		}
	}
	if !haveCPU {
		return procStat{}, fmt.Errorf("stats: %s: no cpu line", p)
	}
	return st, nil
}

// pidLimits reports the PID limit (min of pid_max and threads-max) and the
// number of tasks from /proc/loadavg, as the kubelet's pidlimit.Stats.
func pidLimits(procPath string) (maxPID, running int64, err error) {
	maxPID = -1
	for _, f := range []string{"sys/kernel/pid_max", "sys/kernel/threads-max"} {
		v, err := readInt(filepath.Join(procPath, f))
		if err != nil {
			return 0, 0, err
		}
		if maxPID < 0 || v < maxPID {
			maxPID = v
		}
	}
	p := filepath.Join(procPath, "loadavg")
	data, err := cgroupstat.ReadFile(p, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("stats: read %s: %w", p, err)
	}
	f := strings.Fields(string(data))
	if len(f) < 4 || !strings.Contains(f[3], "/") {
		return 0, 0, fmt.Errorf("stats: %s: unexpected format %q", p, data)
	}
	running, err = strconv.ParseInt(f[3][strings.IndexByte(f[3], '/')+1:], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("stats: %s: %w", p, err)
	}
	return maxPID, running, nil
}

func readInt(p string) (int64, error) {
	data, err := cgroupstat.ReadFile(p, nil)
	if err != nil {
		return 0, fmt.Errorf("stats: read %s: %w", p, err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stats: %s: %w", p, err)
	}
	return v, nil
}

// netInterface is one line of /proc/net/dev.
type netInterface struct {
	name                                 string
	rxBytes, rxErrors, txBytes, txErrors uint64
}

// ignoredInterface is cadvisor's filter for the node's interfaces:
// loopback, container veths and bridges of docker and nerdctl.
func ignoredInterface(name string) bool {
	name = strings.ToLower(name)
	for _, p := range []string{"lo", "veth", "docker", "nerdctl"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// readNetDev reads the host network namespace's interfaces: those of PID 1
// (as cadvisor reads the root container's), or the reader's own when
// ProcPath has no PID 1.
func readNetDev(procPath string) ([]netInterface, error) {
	p := filepath.Join(procPath, "1", "net", "dev")
	data, err := cgroupstat.ReadFile(p, nil)
	if errors.Is(err, fs.ErrNotExist) {
		p = filepath.Join(procPath, "net", "dev")
		data, err = cgroupstat.ReadFile(p, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("stats: read %s: %w", p, err)
	}
	return parseNetDev(p, data)
}

// readNetDevFile reads a /proc/<pid>/net/dev file: the interfaces of that
// process's network namespace, filtered as readNetDev's.
func readNetDevFile(p string) ([]netInterface, error) {
	data, err := cgroupstat.ReadFile(p, nil)
	if err != nil {
		return nil, fmt.Errorf("stats: read %s: %w", p, err)
	}
	return parseNetDev(p, data)
}

// parseNetDev parses the net/dev file p holds, without cadvisor's ignored
// interfaces.
func parseNetDev(p string, data []byte) ([]netInterface, error) {
	var out []netInterface
	n := 0
	for line := range strings.Lines(string(data)) {
		if n++; n <= 2 {
			continue // two header lines
		}
		name, counters, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("stats: %s: invalid line %q", p, line)
		}
		name = strings.TrimSpace(name)
		f := strings.Fields(counters)
		if len(f) != 16 {
			return nil, fmt.Errorf("stats: %s: invalid line %q", p, line)
		}
		if ignoredInterface(name) {
			continue
		}
		var v [4]uint64
		for i, col := range []int{0, 2, 8, 10} { // rx bytes, rx errs, tx bytes, tx errs
			var err error
			if v[i], err = strconv.ParseUint(f[col], 10, 64); err != nil {
				return nil, fmt.Errorf("stats: %s: %s: %w", p, name, err)
			}
		}
		out = append(out, netInterface{name: name, rxBytes: v[0], rxErrors: v[1], txBytes: v[2], txErrors: v[3]})
	}
	return out, nil
}

// selfCgroup is this process's cgroup as the kubelet's getContainer finds
// it: the unified path on cgroup v2; on v1 the cpu hierarchy's path, which
// must equal the memory hierarchy's (else there is no accounting cgroup),
// or the name=systemd path when present.
func selfCgroup(procPath string, v2 bool) (string, error) {
	p := filepath.Join(procPath, "self", "cgroup")
	data, err := cgroupstat.ReadFile(p, nil)
	if err != nil {
		return "", fmt.Errorf("stats: read %s: %w", p, err)
	}
	byController := map[string]string{}
	for line := range strings.Lines(string(data)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			byController[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			byController[c] = parts[2]
		}
	}
	if v2 {
		if c, ok := byController[""]; ok {
			return c, nil
		}
		return "", fmt.Errorf("stats: %s: no unified cgroup", p)
	}
	cpu, okCPU := byController["cpu"]
	memory, okMem := byController["memory"]
	switch {
	case !okCPU || !okMem:
		return "", fmt.Errorf("stats: %s: no cpu or memory cgroup", p)
	case cpu != memory:
		return "", fmt.Errorf("stats: %s: cpu and memory cgroup hierarchy not unified: cpu %s, memory %s", p, cpu, memory)
	}
	if sd, ok := byController["name=systemd"]; ok {
		return sd, nil
	}
	return cpu, nil
}
