package cgroups

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// unlimitedV1 is where cgroup v1 reports "no memory limit" (the largest
// page-aligned int64).
const unlimitedV1 = int64(0x7FFFFFFFFFFFF000)

func isCgroupFS(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Type == unix.CGROUP_SUPER_MAGIC || st.Type == unix.CGROUP2_SUPER_MAGIC
}

func resourcehelperRequests(pod *v1.Pod) v1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// dir is the directory of the cgroup elems in the hierarchy at root
// (with the systemd driver, its slices' directories).
func (m *Manager) dir(root string, elems []string) string {
	if m.systemd {
		return filepath.Join(append([]string{root}, sliceNames(elems)...)...)
	}
	return filepath.Join(append([]string{root}, elems...)...)
}

// hasController reports whether the v1 hierarchy at root carries the
// controller c ("cpu,cpuacct" carries cpu).
func hasController(root, c string) bool {
	for _, n := range strings.Split(filepath.Base(root), ",") {
		if n == c {
			return true
		}
	}
	return false
}

// create makes the cgroup elems (and its missing parents) in every
// hierarchy and writes r; pod cgroups (limitHuge) also get a huge page
// limit for every size the node has (0 unless r asks for it).
//
// With the systemd driver the slices are started through systemd first
// (which creates their cgroups in the hierarchies it manages); the
// directories it leaves out (v1 cpuset, hugetlb) are made here.
func (m *Manager) create(ctx context.Context, elems []string, r Resources, limitHuge bool) error {
	if m.systemd {
		if err := m.startSlices(ctx, elems, r); err != nil {
			return err
		}
	}
	for _, root := range m.roots {
		for i := 1; i <= len(elems); i++ {
			dir := m.dir(root, elems[:i])
			if err := os.Mkdir(dir, 0o755); err != nil {
				if errors.Is(err, fs.ErrExist) {
					continue
				}
				return err
			}
			if m.v2 {
				if err := enableControllers(filepath.Dir(dir)); err != nil {
					return err
				}
			} else if hasController(root, "cpuset") {
				// A new v1 cpuset is empty: no task may join it until it
				// has its parent's CPUs and memory nodes.
				for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
					if b, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f)); err == nil {
						if err := writeFile(filepath.Join(dir, f), strings.TrimSpace(string(b))); err != nil {
							return err
						}
					}
				}
			}
		}
	}
	return m.write(ctx, elems, r, limitHuge)
}

// enableControllers turns on, for the children of the v2 cgroup dir, every
// controller dir has that the agent writes.
func enableControllers(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil // not a cgroup (tests) or the mount's parent
	}
	var want []string
	for _, c := range strings.Fields(string(b)) {
		switch c {
		case "cpu", "cpuset", "memory", "pids", "hugetlb", "io":
			want = append(want, "+"+c)
		}
	}
	if len(want) == 0 {
		return nil
	}
	return writeFile(filepath.Join(dir, "cgroup.subtree_control"), strings.Join(want, " "))
}

// write sets r on the cgroup elems: CPU shares when positive, the quota
// when non-zero, memory when non-zero, PIDs when positive, huge pages as
// given (and 0 for the node's other sizes when limitHuge).
//
// With the systemd driver the values are also set as the slice's unit
// properties, which systemd re-applies on a daemon-reload.
func (m *Manager) write(ctx context.Context, elems []string, r Resources, limitHuge bool) error {
	var errs []error
	if m.systemd {
		if err := m.setSliceProps(ctx, elems, r); err != nil {
			errs = append(errs, err)
		}
	}
	set := func(dir, file, value string) {
		if err := writeFile(filepath.Join(dir, file), value); err != nil {
			errs = append(errs, err)
		}
	}
	for _, root := range m.roots {
		dir := m.dir(root, elems)
		if m.v2 {
			if r.CPUShares > 0 {
				set(dir, "cpu.weight", strconv.FormatUint(weightFromShares(r.CPUShares), 10))
			}
			if r.CPUQuota != 0 {
				q := "max"
				if r.CPUQuota > 0 {
					q = strconv.FormatInt(r.CPUQuota, 10)
				}
				set(dir, "cpu.max", fmt.Sprintf("%s %d", q, period(r)))
			}
			if r.Memory != 0 {
				set(dir, "memory.max", limitV2(r.Memory))
			}
			if r.PIDs > 0 {
				set(dir, "pids.max", strconv.FormatInt(r.PIDs, 10))
			}
			m.writeHugePages(dir, "hugetlb.%s.max", r.HugePages, limitHuge, limitV2, set)
			continue
		}
		switch {
		case hasController(root, "cpu"):
			if r.CPUShares > 0 {
				set(dir, "cpu.shares", strconv.FormatUint(r.CPUShares, 10))
			}
			if r.CPUQuota > 0 {
				set(dir, "cpu.cfs_period_us", strconv.FormatUint(period(r), 10))
			}
			if r.CPUQuota != 0 {
				set(dir, "cpu.cfs_quota_us", strconv.FormatInt(max(r.CPUQuota, -1), 10))
			}
		case hasController(root, "memory"):
			if r.Memory != 0 {
				set(dir, "memory.limit_in_bytes", strconv.FormatInt(max(r.Memory, -1), 10))
			}
		case hasController(root, "pids"):
			if r.PIDs > 0 {
				set(dir, "pids.max", strconv.FormatInt(r.PIDs, 10))
			}
		case hasController(root, "hugetlb"):
			m.writeHugePages(dir, "hugetlb.%s.limit_in_bytes", r.HugePages, limitHuge, func(v int64) string { return strconv.FormatInt(v, 10) }, set)
		}
	}
	return errors.Join(errs...)
}

func period(r Resources) uint64 {
	if r.CPUPeriod == 0 {
		return QuotaPeriod
	}
	return r.CPUPeriod
}

func limitV2(v int64) string {
	if v < 0 {
		return "max"
	}
	return strconv.FormatInt(v, 10)
}

// writeHugePages writes the limits of every huge page size the cgroup
// offers (its hugetlb.<size>.* files): the size's entry in limits, or 0
// when limitHuge; sizes absent without limitHuge are left alone.
func (m *Manager) writeHugePages(dir, pattern string, limits map[int64]int64, limitHuge bool, format func(int64) string, set func(dir, file, value string)) {
	matches, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf(pattern, "*")))
	for _, f := range matches {
		name := strings.TrimPrefix(filepath.Base(f), "hugetlb.")
		size, ok := pageSize(name[:strings.IndexByte(name, '.')])
		if !ok {
			continue
		}
		v, found := limits[size]
		if !found && !limitHuge {
			continue
		}
		set(dir, filepath.Base(f), format(v))
	}
}

// pageSize parses a hugetlb size name ("2MB", "1GB", "64KB": binary units).
func pageSize(s string) (int64, bool) {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"KB", 10}, {"MB", 20}, {"GB", 30}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			return v << u.shift, err == nil
		}
	}
	return 0, false
}

// weightFromShares maps v1 CPU shares [2, 262144] onto cgroup v2's
// cpu.weight [1, 10000], linearly, as runc does.
func weightFromShares(shares uint64) uint64 {
	if shares == 0 {
		return 0
	}
	return 1 + (shares-2)*9999/262142
}

// SameShares reports whether two CPU shares values are the same setting
// of this host's cgroups: equal on v1; on v2, the same weight (weights are
// coarser than shares, and shares read back from a weight round).
func (m *Manager) SameShares(a, b uint64) bool {
	return a == b || m.v2 && weightFromShares(a) == weightFromShares(b)
}

// sharesFromWeight inverts weightFromShares, as far as the rounding
// lets it: the shares of a weight read back map to that weight again.
func sharesFromWeight(w uint64) uint64 {
	if w == 0 {
		return 0
	}
	return 2 + ((w-1)*262142+9998)/9999
}

func readInt(file string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

func writeFile(file, value string) error {
	if err := os.WriteFile(file, []byte(value), 0o644); err != nil {
		return fmt.Errorf("write %q to %s: %w", value, file, err)
	}
	return nil
}
