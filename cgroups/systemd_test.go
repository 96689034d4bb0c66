package cgroups

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeSystemd stands in for systemd's D-Bus API: starting a slice makes
// its directory in the hierarchies systemd manages (under mnt), stopping it
// removes them; every call is recorded.
type fakeSystemd struct {
	mu      sync.Mutex
	mnt     string
	managed []string // hierarchies (v1) or "" (v2)
	started map[string][]sddbus.Property
	set     map[string][]sddbus.Property
	stopped []string
	closed  bool
}

func (f *fakeSystemd) dirs(name string) []string {
	var out []string
	for _, h := range f.managed {
		out = append(out, filepath.Join(append([]string{f.mnt, h}, sliceNames(elemsFromSlicePath(name))...)...))
	}
	return out
}

func (f *fakeSystemd) StartTransientUnitContext(_ context.Context, name, mode string, props []sddbus.Property, ch chan<- string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.started[name]; ok {
		return 0, godbus.Error{Name: "org.freedesktop.systemd1.UnitExists"}
	}
	f.started[name] = props
	for _, d := range f.dirs(name) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return 0, err
		}
	}
	ch <- "done"
	return 1, nil
}

func (f *fakeSystemd) SetUnitPropertiesContext(_ context.Context, name string, _ bool, props ...sddbus.Property) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set[name] = append(f.set[name], props...)
	return nil
}

func (f *fakeSystemd) StopUnitContext(_ context.Context, name, _ string, ch chan<- string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.started[name]; !ok {
		return 0, godbus.Error{Name: "org.freedesktop.systemd1.NoSuchUnit"}
	}
	delete(f.started, name)
	f.stopped = append(f.stopped, name)
	for _, d := range f.dirs(name) {
		_ = os.RemoveAll(d)
	}
	ch <- "done"
	return 1, nil
}

func (f *fakeSystemd) Close() { f.closed = true }

// prop is the value of the last property called name.
func prop(props []sddbus.Property, name string) any {
	var v any
	for _, p := range props {
		if p.Name == name {
			v = p.Value.Value()
		}
	}
	return v
}

func TestSliceNames(t *testing.T) {
	assert.Equal(t, []string{"kubepods.slice", "kubepods-burstable.slice", "kubepods-burstable-pod12ab_34cd.slice"},
		sliceNames([]string{"kubepods", "burstable", "pod12ab-34cd"}))
	assert.Equal(t, []string{"kubepods", "burstable", "pod12ab-34cd"},
		elemsFromSlicePath("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12ab_34cd.slice"))
}

// With the systemd driver on cgroup v1, the tree is systemd slices named as
// the kubelet names them, each started through D-Bus with the pod's
// resources as unit properties (CPUShares, MemoryLimit, CPU quota per
// second, TasksMax) and the files written as well; Destroy stops the
// slice.
func TestManagerSystemdV1(t *testing.T) {
	ctx := context.Background()
	mnt := v1Tree(t)
	sd := &fakeSystemd{mnt: mnt, managed: []string{"cpu,cpuacct", "memory", "pids"},
		started: map[string][]sddbus.Property{}, set: map[string][]sddbus.Property{}}
	m, err := New(Config{Mount: mnt, Driver: DriverSystemd, Systemd: sd, PodPIDsLimit: 512,
		Allocatable: rl("cpu", "2", "memory", "4Gi")})
	require.NoError(t, err)
	require.NoError(t, m.Setup(ctx))
	assert.Equal(t, "/kubepods.slice", m.PodsCgroup())
	assert.Equal(t, uint64(2048), prop(sd.started["kubepods.slice"], "CPUShares"), "allocatable CPU")
	assert.Equal(t, uint64(4<<30), prop(sd.started["kubepods.slice"], "MemoryLimit"))
	assert.Equal(t, "kubepods.slice", prop(sd.started["kubepods-burstable.slice"], "Wants").([]string)[0])
	assert.Equal(t, false, prop(sd.started["kubepods-besteffort.slice"], "DefaultDependencies"))
	assert.Equal(t, "2", read(t, mnt, "cpu,cpuacct", "kubepods.slice", "kubepods-besteffort.slice", "cpu.shares"))
	assert.Equal(t, "0-1", read(t, mnt, "cpuset", "kubepods.slice", "kubepods-burstable.slice", "cpuset.cpus"),
		"a hierarchy systemd leaves alone is made here")

	g := podWith("1234-abcd", guar("a", "500m", "128Mi"))
	assert.Equal(t, "/kubepods.slice/kubepods-pod1234_abcd.slice", m.PodCgroup(g))
	require.NoError(t, m.EnsurePod(ctx, g))
	assert.True(t, m.PodExists(g))
	props := sd.started["kubepods-pod1234_abcd.slice"]
	assert.Equal(t, uint64(512), prop(props, "CPUShares"))
	assert.Equal(t, uint64(500000), prop(props, "CPUQuotaPerSecUSec"))
	assert.Equal(t, uint64(128<<20), prop(props, "MemoryLimit"))
	assert.Equal(t, uint64(512), prop(props, "TasksMax"))
	assert.Equal(t, "50000", read(t, mnt, "cpu,cpuacct", "kubepods.slice", "kubepods-pod1234_abcd.slice", "cpu.cfs_quota_us"))

	require.NoError(t, m.UpdatePod(ctx, g, Resources{Memory: 100 << 20}))
	assert.Equal(t, uint64(100<<20), prop(sd.set["kubepods-pod1234_abcd.slice"], "MemoryLimit"), "a resize sets the property too")
	assert.Equal(t, "104857600", read(t, mnt, "memory", "kubepods.slice", "kubepods-pod1234_abcd.slice", "memory.limit_in_bytes"))

	pods, err := m.Pods()
	require.NoError(t, err)
	assert.Equal(t, map[types.UID]string{"1234-abcd": "/kubepods.slice/kubepods-pod1234_abcd.slice"}, pods)
	require.NoError(t, m.Destroy(ctx, pods["1234-abcd"]))
	assert.Equal(t, []string{"kubepods-pod1234_abcd.slice"}, sd.stopped)
	assert.False(t, m.PodExists(g))
	_, err = os.Stat(filepath.Join(mnt, "cpuset", "kubepods.slice", "kubepods-pod1234_abcd.slice"))
	assert.True(t, os.IsNotExist(err), "gone from the hierarchies systemd does not manage too")
	m.Close()
	assert.False(t, sd.closed, "a connection the host passed is the host's to close")
}

// On cgroup v2 the properties are the unified ones (CPUWeight, MemoryMax).
func TestManagerSystemdV2(t *testing.T) {
	ctx := context.Background()
	mnt := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644))
	sd := &fakeSystemd{mnt: mnt, managed: []string{""}, started: map[string][]sddbus.Property{}, set: map[string][]sddbus.Property{}}
	m, err := New(Config{Mount: mnt, Driver: DriverSystemd, Systemd: sd})
	require.NoError(t, err)
	require.NoError(t, m.Setup(ctx))
	b := podWith("b", ctr("a", rl("cpu", "100m"), rl("memory", "64Mi")))
	require.NoError(t, m.EnsurePod(ctx, b))
	props := sd.started["kubepods-burstable-podb.slice"]
	assert.Equal(t, uint64(4), prop(props, "CPUWeight"))
	assert.Equal(t, uint64(64<<20), prop(props, "MemoryMax"))
	assert.Nil(t, prop(props, "CPUShares"))
	assert.Equal(t, "67108864", read(t, mnt, "kubepods.slice", "kubepods-burstable.slice", "kubepods-burstable-podb.slice", "memory.max"))
	assert.Equal(t, []v1.PodQOSClass{v1.PodQOSBurstable}, []v1.PodQOSClass{QOSClass(b)})
}

// Without systemd as init (as in a container), the driver is refused with
// what to do, instead of failing at the first pod.
func TestSystemdDriverNeedsSystemd(t *testing.T) {
	if systemdRunning() {
		t.Skip("systemd is this host's init")
	}
	_, err := New(Config{Mount: v1Tree(t), Driver: DriverSystemd})
	require.ErrorContains(t, err, "needs systemd as the host's init")
}
