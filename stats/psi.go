package stats

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/nodekit/nodekit/internal/cgroupstat"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// pressure is a cgroup's pressure stall information (PSI) as cadvisor
// reports it to the kubelet: a field is nil when the cgroup has no
// directory for that controller (cpu or cpuacct, memory, and io on v2 or
// blkio on v1), and otherwise holds the pressure file's figures, or zeros
// where there are none (cgroup v1, a kernel without PSI, PSI turned off
// for the cgroup).
type pressure struct {
	cpu, memory, io *statsapi.PSIStats
}

// readPressure reads the pressure of cgroup; withIO also reads its IO
// pressure. It fails with errNoCgroup when none of the cgroup's
// directories exist, or when a pressure file holds garbage.
func (c cgroupFS) readPressure(cgroup string, withIO bool) (pressure, error) {
	cpuDir, memDir, ioDir := c.existingDir("cpuacct", cgroup), c.existingDir("memory", cgroup), ""
	if withIO {
		ioDir = c.existingDir("blkio", cgroup)
	}
	if cpuDir == "" && memDir == "" && ioDir == "" {
		return pressure{}, fmt.Errorf("%w: %s", errNoCgroup, cgroup)
	}
	return c.pressureIn(cpuDir, memDir, ioDir)
}

// pressureIn reads the pressure files of the CPU, memory and IO
// directories of one cgroup; an empty directory leaves its figure nil. On
// cgroup v1, which has no pressure files, every present figure is zeros.
func (c cgroupFS) pressureIn(cpuDir, memDir, ioDir string) (pressure, error) {
	var p pressure
	for _, r := range []struct {
		dir, file string
		dst       **statsapi.PSIStats
	}{{cpuDir, "cpu.pressure", &p.cpu}, {memDir, "memory.pressure", &p.memory}, {ioDir, "io.pressure", &p.io}} {
		if r.dir == "" {
			continue
		}
		if !c.v2 {
			*r.dst = &statsapi.PSIStats{}
			continue
		}
		psi, err := readPSIFile(filepath.Join(r.dir, r.file))
		if err != nil {
			return pressure{}, err
		}
		*r.dst = psi
	}
	return p, nil
}

// readPSIFile reads a cgroup v2 pressure file. A file that does not exist
// or cannot be read because PSI is off (EOPNOTSUPP) is zeros, as cadvisor
// leaves its figures then; any other read error or a malformed line is an
// error.
func readPSIFile(p string) (*statsapi.PSIStats, error) {
	data, err := cgroupstat.ReadFile(p, nil)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTSUP):
		return &statsapi.PSIStats{}, nil
	case err != nil:
		return nil, fmt.Errorf("stats: read %s: %w", p, err)
	}
	psi, err := parsePSI(string(data))
	if err != nil {
		return nil, fmt.Errorf("stats: %s: %w", p, err)
	}
	return psi, nil
}

// parsePSI parses the kernel's pressure format:
//
//	some avg10=0.12 avg60=0.05 avg300=0.01 total=123456
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=4567
//
// A line or key it does not know is skipped (older kernels have no "full"
// line for CPU: its figures stay zero). Totals are kept in the file's
// unit, microseconds, as cadvisor and the kubelet report them.
func parsePSI(data string) (*statsapi.PSIStats, error) {
	out := &statsapi.PSIStats{}
	for line := range strings.Lines(data) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var d *statsapi.PSIData
		switch f[0] {
		case "some":
			d = &out.Some
		case "full":
			d = &out.Full
		default:
			continue
		}
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("invalid PSI field %q", kv)
			}
			var err error
			switch k {
			case "avg10":
				d.Avg10, err = strconv.ParseFloat(v, 64)
			case "avg60":
				d.Avg60, err = strconv.ParseFloat(v, 64)
			case "avg300":
				d.Avg300, err = strconv.ParseFloat(v, 64)
			case "total":
				d.Total, err = strconv.ParseUint(v, 10, 64)
			}
			if err != nil {
				return nil, fmt.Errorf("invalid PSI %s %s: %w", f[0], k, err)
			}
		}
	}
	return out, nil
}

// criPSI converts the runtime's PSI; nil (not reported) stays nil, a
// missing line is zeros, as the kubelet's makePSIStats.
func criPSI(p *runtimeapi.PsiStats) *statsapi.PSIStats {
	if p == nil {
		return nil
	}
	out := &statsapi.PSIStats{}
	if f := p.Full; f != nil {
		out.Full = statsapi.PSIData{Total: f.Total, Avg10: f.Avg10, Avg60: f.Avg60, Avg300: f.Avg300}
	}
	if s := p.Some; s != nil {
		out.Some = statsapi.PSIData{Total: s.Total, Avg10: s.Avg10, Avg60: s.Avg60, Avg300: s.Avg300}
	}
	return out
}
