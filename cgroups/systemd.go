package cgroups

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"strings"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// SystemdConn is the part of systemd's D-Bus API the systemd driver uses;
// *github.com/coreos/go-systemd/v22/dbus.Conn implements it. Tests pass a
// fake in Config.Systemd.
type SystemdConn interface {
	StartTransientUnitContext(ctx context.Context, name, mode string, props []sddbus.Property, ch chan<- string) (int, error)
	SetUnitPropertiesContext(ctx context.Context, name string, runtime bool, props ...sddbus.Property) error
	StopUnitContext(ctx context.Context, name, mode string, ch chan<- string) (int, error)
	Close()
}

// systemdRunning reports whether systemd is the host's init (as
// sd_booted(3) tells it).
func systemdRunning() bool {
	st, err := os.Lstat("/run/systemd/system")
	return err == nil && st.IsDir()
}

// sliceNames are the systemd slice names of the cgroup elems, one per
// level, as the kubelet's systemd driver names them: each level's name is
// the path so far joined by "-", with "-" inside an element escaped to
// "_" (kubepods, burstable, pod<uid> → kubepods.slice,
// kubepods-burstable.slice, kubepods-burstable-pod<uid with _>.slice).
func sliceNames(elems []string) []string {
	out := make([]string, len(elems))
	parts := make([]string, 0, len(elems))
	for i, e := range elems {
		parts = append(parts, strings.ReplaceAll(e, "-", "_"))
		out[i] = strings.Join(parts, "-") + ".slice"
	}
	return out
}

// elemsFromSlicePath turns a systemd cgroup path
// (/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice)
// back into the cgroup's elements.
func elemsFromSlicePath(cgroup string) []string {
	last := strings.TrimSuffix(path.Base(cgroup), ".slice")
	parts := strings.Split(last, "-")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, "_", "-")
	}
	return parts
}

// systemdProps are the unit properties that carry r, so that systemd
// keeps them across a daemon-reload (the files are written as well).
func (m *Manager) systemdProps(r Resources) []sddbus.Property {
	var props []sddbus.Property
	add := func(name string, v uint64) {
		props = append(props, sddbus.Property{Name: name, Value: godbus.MakeVariant(v)})
	}
	if r.CPUShares > 0 {
		if m.v2 {
			add("CPUWeight", weightFromShares(r.CPUShares))
		} else {
			add("CPUShares", r.CPUShares)
		}
	}
	switch {
	case r.CPUQuota > 0:
		period := r.CPUPeriod
		if period == 0 {
			period = QuotaPeriod
		}
		// systemd takes the quota per second, in µs, and rounds it to
		// 10ms of CPU time per second; round up so it is never below the
		// quota the files get.
		perSec := uint64(r.CPUQuota) * 1000000 / period
		if rem := perSec % 10000; rem != 0 {
			perSec += 10000 - rem
		}
		add("CPUQuotaPerSecUSec", perSec)
	case r.CPUQuota < 0:
		add("CPUQuotaPerSecUSec", math.MaxUint64)
	}
	mem := "MemoryLimit"
	if m.v2 {
		mem = "MemoryMax"
	}
	switch {
	case r.Memory > 0:
		add(mem, uint64(r.Memory))
	case r.Memory < 0:
		add(mem, math.MaxUint64)
	}
	if r.PIDs > 0 {
		add("TasksMax", uint64(r.PIDs))
	}
	return props
}

// waitJob waits for a systemd job's result on ch.
func waitJob(ctx context.Context, unit, what string, ch <-chan string) error {
	select {
	case res := <-ch:
		if res != "done" {
			return fmt.Errorf("systemd: %s %s: job %s", what, unit, res)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("systemd: %s %s: %w", what, unit, ctx.Err())
	}
}

// startSlices creates the slices of elems that do not exist yet, parents
// first, with r's properties on the last one, as transient units.
func (m *Manager) startSlices(ctx context.Context, elems []string, r Resources) error {
	names := sliceNames(elems)
	for i, name := range names {
		if _, err := os.Stat(m.dir(m.roots[0], elems[:i+1])); err == nil {
			continue
		}
		props := []sddbus.Property{
			sddbus.PropDescription("nodekit: " + strings.Join(elems[:i+1], "/")),
			{Name: "DefaultDependencies", Value: godbus.MakeVariant(false)},
			{Name: "MemoryAccounting", Value: godbus.MakeVariant(true)},
			{Name: "CPUAccounting", Value: godbus.MakeVariant(true)},
			{Name: "TasksAccounting", Value: godbus.MakeVariant(true)},
		}
		if i > 0 {
			props = append(props, sddbus.PropWants(names[i-1]))
		}
		if i == len(names)-1 {
			props = append(props, m.systemdProps(r)...)
		}
		ch := make(chan string, 1)
		if _, err := m.sd.StartTransientUnitContext(ctx, name, "replace", props, ch); err != nil {
			var de godbus.Error
			if errors.As(err, &de) && de.Name == "org.freedesktop.systemd1.UnitExists" {
				continue
			}
			return fmt.Errorf("systemd: start %s: %w", name, err)
		}
		if err := waitJob(ctx, name, "start", ch); err != nil {
			return err
		}
	}
	return nil
}

// setSliceProps sets r's properties on the slice of elems.
func (m *Manager) setSliceProps(ctx context.Context, elems []string, r Resources) error {
	props := m.systemdProps(r)
	if len(props) == 0 {
		return nil
	}
	names := sliceNames(elems)
	if err := m.sd.SetUnitPropertiesContext(ctx, names[len(names)-1], true, props...); err != nil {
		return fmt.Errorf("systemd: set properties of %s: %w", names[len(names)-1], err)
	}
	return nil
}

// stopSlice stops the slice of elems: systemd kills what is left in it and
// removes its cgroups.
func (m *Manager) stopSlice(ctx context.Context, elems []string) error {
	names := sliceNames(elems)
	name := names[len(names)-1]
	ch := make(chan string, 1)
	if _, err := m.sd.StopUnitContext(ctx, name, "replace", ch); err != nil {
		var de godbus.Error
		if errors.As(err, &de) && de.Name == "org.freedesktop.systemd1.NoSuchUnit" {
			return nil
		}
		return fmt.Errorf("systemd: stop %s: %w", name, err)
	}
	return waitJob(ctx, name, "stop", ch)
}
