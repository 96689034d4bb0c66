package stats

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit/nodekit/stats/statstest"
)

func TestParsePSI(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     *statsapi.PSIStats
		err      string
	}{{
		name: "memory, as the kernel writes it",
		in:   "some avg10=1.71 avg60=2.36 avg300=2.57 total=230548833\nfull avg10=0.00 avg60=0.01 avg300=0.00 total=1234\n",
		want: &statsapi.PSIStats{
			Some: statsapi.PSIData{Avg10: 1.71, Avg60: 2.36, Avg300: 2.57, Total: 230548833},
			Full: statsapi.PSIData{Avg60: 0.01, Total: 1234},
		},
	}, {
		name: "cpu before kernel 5.13: no full line",
		in:   "some avg10=0.10 avg60=0.20 avg300=0.30 total=42\n",
		want: &statsapi.PSIStats{Some: statsapi.PSIData{Avg10: 0.1, Avg60: 0.2, Avg300: 0.3, Total: 42}},
	}, {
		name: "unknown lines and keys are skipped",
		in:   "\nsome avg10=0.50 total=7 future=1\nother x\n",
		want: &statsapi.PSIStats{Some: statsapi.PSIData{Avg10: 0.5, Total: 7}},
	}, {
		name: "empty",
		want: &statsapi.PSIStats{},
	}, {
		name: "a field without a value",
		in:   "some avg10 avg60=0.00 avg300=0.00 total=0\n",
		err:  `invalid PSI field "avg10"`,
	}, {
		name: "a total that is not a number",
		in:   "full avg10=0.00 avg60=0.00 avg300=0.00 total=-1\n",
		err:  "invalid PSI full total",
	}, {
		name: "an average that is not a number",
		in:   "some avg10=x avg60=0.00 avg300=0.00 total=0\n",
		err:  "invalid PSI some avg10",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePSI(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestReadPSIFile(t *testing.T) {
	dir := t.TempDir()
	got, err := readPSIFile(filepath.Join(dir, "cpu.pressure"))
	require.NoError(t, err)
	require.Equal(t, &statsapi.PSIStats{}, got, "no file (no PSI in the kernel): zeros, as cadvisor's")

	p := filepath.Join(dir, "io.pressure")
	require.NoError(t, os.WriteFile(p, []byte("some avg10=garbage\n"), 0o644))
	_, err = readPSIFile(p)
	require.ErrorContains(t, err, p)
}

func TestCRIPSI(t *testing.T) {
	require.Nil(t, criPSI(nil), "not reported")
	require.Equal(t, &statsapi.PSIStats{}, criPSI(&runtimeapi.PsiStats{}), "reported without lines: zeros")
	require.Equal(t, &statsapi.PSIStats{
		Some: statsapi.PSIData{Total: 1, Avg10: 2, Avg60: 3, Avg300: 4},
		Full: statsapi.PSIData{Total: 5, Avg10: 6, Avg60: 7, Avg300: 8},
	}, criPSI(&runtimeapi.PsiStats{
		Some: &runtimeapi.PsiData{Total: 1, Avg10: 2, Avg60: 3, Avg300: 4},
		Full: &runtimeapi.PsiData{Total: 5, Avg10: 6, Avg60: 7, Avg300: 8},
	}))
}

// requireIO checks an IO object's time (as an instant) and pressure.
func requireIO(t *testing.T, at time.Time, psi *statsapi.PSIStats, got *statsapi.IOStats, msg ...any) {
	t.Helper()
	require.NotNil(t, got, msg...)
	require.True(t, at.Equal(got.Time.Time), "IO time: want %v, got %v %v", at, got.Time.Time, msg)
	require.Equal(t, psi, got.PSI, msg...)
}

// zeroPSI is cadvisor's pressure on cgroup v1, which the kubelet reports.
var zeroPSI = &statsapi.PSIStats{}

// TestNodePressure: the node and the system containers carry their
// cgroups' pressure, CPU and memory in both summaries and IO in the full
// one; zeros on cgroup v1, as the kubelet reports cadvisor's.
func TestNodePressure(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		t.Run(map[bool]string{false: "cgroup v1", true: "cgroup v2"}[v2], func(t *testing.T) {
			h := newHost(t, v2)
			want := func(cgroup string, resource int) *statsapi.PSIStats {
				if !v2 {
					return zeroPSI
				}
				return wantPSI(h.seed(cgroup), resource)
			}
			p := h.provider(func(c *Config) { c.AllocatableMemory = 3 * Gi })
			s, err := p.Get(context.Background())
			require.NoError(t, err)
			n := s.Node
			require.Equal(t, want("/", psiCPU), n.CPU.PSI)
			require.Equal(t, want("/", psiMemory), n.Memory.PSI)
			requireIO(t, epoch, want("/", psiIO), n.IO)
			require.Equal(t, []string{"kubelet", "runtime", "pods"}, sysNames(s))
			for _, c := range []struct{ name, cgroup string }{
				{statsapi.SystemContainerKubelet, h.kubeletCg},
				{statsapi.SystemContainerRuntime, h.runtimeCg},
				{statsapi.SystemContainerPods, h.podsCg},
			} {
				sc := sysContainer(t, s, c.name)
				require.Equal(t, want(c.cgroup, psiCPU), sc.CPU.PSI, c.name)
				require.Equal(t, want(c.cgroup, psiMemory), sc.Memory.PSI, c.name)
				requireIO(t, epoch, want(c.cgroup, psiIO), sc.IO, c.name)
			}

			s, err = p.GetCPUAndMemoryStats(context.Background())
			require.NoError(t, err)
			require.Equal(t, want("/", psiCPU), s.Node.CPU.PSI)
			require.Equal(t, want("/", psiMemory), s.Node.Memory.PSI)
			require.Nil(t, s.Node.IO, "no IO in the CPU and memory summary, as the kubelet's")
			rt := sysContainer(t, s, statsapi.SystemContainerRuntime)
			require.Equal(t, want(h.runtimeCg, psiMemory), rt.Memory.PSI)
			require.Nil(t, rt.IO)
		})
	}
}

func TestNodePressureCorners(t *testing.T) {
	ctx := context.Background()

	t.Run("cgroup v2 without pressure files", func(t *testing.T) {
		h := newHost(t, true)
		for _, r := range []string{"cpu", "memory", "io"} {
			require.NoError(t, os.Remove(filepath.Join(h.cg, r+".pressure")))
		}
		s, err := h.provider().Get(ctx)
		require.NoError(t, err)
		require.Equal(t, zeroPSI, s.Node.CPU.PSI, "zeros, as cadvisor's")
		require.Equal(t, zeroPSI, s.Node.Memory.PSI)
		require.Equal(t, zeroPSI, s.Node.IO.PSI)
		require.Equal(t, wantPSI(h.seed(h.runtimeCg), psiCPU), sysContainer(t, s, "runtime").CPU.PSI, "the others have theirs")
	})

	t.Run("cgroup v1 without blkio", func(t *testing.T) {
		h := newHost(t, false)
		require.NoError(t, os.RemoveAll(filepath.Join(h.cg, "blkio")))
		s, err := h.provider().Get(ctx)
		require.NoError(t, err)
		require.Nil(t, s.Node.IO, "no IO controller: no IO object, as cadvisor's HasDiskIo")
		require.Nil(t, sysContainer(t, s, "runtime").IO)
		require.Equal(t, zeroPSI, s.Node.CPU.PSI)
	})

	t.Run("no cgroups", func(t *testing.T) {
		h := newHost(t, true)
		require.NoError(t, os.RemoveAll(h.cg))
		s, err := h.provider().Get(ctx)
		require.NoError(t, err)
		require.NotNil(t, s.Node.CPU, "from /proc/stat")
		require.Nil(t, s.Node.CPU.PSI)
		require.Nil(t, s.Node.Memory.PSI)
		require.Nil(t, s.Node.IO)
	})

	t.Run("a pressure file with garbage", func(t *testing.T) {
		h := newHost(t, true)
		h.write(h.cg, h.runtimeCg+"/memory.pressure", "some avg10=x\n")
		s, err := h.provider().Get(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"kubelet", "pods"}, sysNames(s), "an unreadable cgroup is left out, as before")
	})
}

// podHost is a host with pod web (two containers) whose sandbox and
// containers report no pressure, and its cgroups as the cgroupfs driver
// names them: /kubepods/burstable/poduid-web/{sb-uid-web,c-uid-web-c0,
// c-uid-web-c1}.
func podHost(t *testing.T, v2, embed bool) *host {
	h := newHost(t, v2)
	h.rt.Update(func(s *statstestState) { addPod(s, "web", 2, embed) })
	podCg := h.podsCg + "/burstable/poduid-web"
	for _, cg := range []string{h.podsCg + "/burstable", podCg, podCg + "/" + sandboxID("uid-web"),
		podCg + "/" + containerID("uid-web", "c0"), podCg + "/" + containerID("uid-web", "c1")} {
		h.addCgroupDir(cg)
	}
	return h
}

// TestPodPressureFromCgroups: a runtime that reports no pressure (as
// containerd on cgroup v1): pods and containers carry their cgroups', zeros
// on v1, as the kubelet's from cadvisor.
func TestPodPressureFromCgroups(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		for _, embed := range []bool{true, false} {
			t.Run(map[bool]string{false: "cgroup v1", true: "cgroup v2"}[v2]+map[bool]string{true: "", false: " container stats apart"}[embed], func(t *testing.T) {
				h := podHost(t, v2, embed)
				podCg := h.podsCg + "/burstable/poduid-web"
				c0Cg := podCg + "/" + containerID("uid-web", "c0")
				want := func(cgroup string, resource int) *statsapi.PSIStats {
					if !v2 {
						return zeroPSI
					}
					return wantPSI(h.seed(cgroup), resource)
				}
				p := h.provider()
				s, err := p.Get(context.Background())
				require.NoError(t, err)
				web := podByName(t, s, "web")
				require.Equal(t, want(podCg, psiCPU), web.CPU.PSI)
				require.Equal(t, want(podCg, psiMemory), web.Memory.PSI)
				requireIO(t, epoch, want(podCg, psiIO), web.IO)
				c0 := containerByName(t, web, "c0")
				require.Equal(t, want(c0Cg, psiCPU), c0.CPU.PSI)
				require.Equal(t, want(c0Cg, psiMemory), c0.Memory.PSI)
				requireIO(t, epoch, want(c0Cg, psiIO), c0.IO)
				c1 := containerByName(t, web, "c1")
				require.Equal(t, want(podCg+"/"+containerID("uid-web", "c1"), psiCPU), c1.CPU.PSI)
				if v2 {
					require.NotEqual(t, c0.CPU.PSI, c1.CPU.PSI, "each container its own")
				}

				s, err = p.GetCPUAndMemoryStats(context.Background())
				require.NoError(t, err)
				web = podByName(t, s, "web")
				require.Equal(t, want(podCg, psiMemory), web.Memory.PSI)
				require.Nil(t, web.IO)
				c0 = containerByName(t, web, "c0")
				require.Equal(t, want(c0Cg, psiCPU), c0.CPU.PSI)
				require.Nil(t, c0.IO, "no IO in the CPU and memory summary")
			})
		}
	}
}

// TestPodPressureFromRuntime: the runtime's pressure wins over the
// cgroups'; what it leaves out comes from them.
func TestPodPressureFromRuntime(t *testing.T) {
	h := podHost(t, true, true)
	podCg := h.podsCg + "/burstable/poduid-web"
	c0Cg := podCg + "/" + containerID("uid-web", "c0")
	criPressure := func(n uint64) *runtimeapi.PsiStats {
		return &runtimeapi.PsiStats{Some: &runtimeapi.PsiData{Total: n, Avg10: 1}, Full: &runtimeapi.PsiData{Total: n + 1}}
	}
	fromCRI := func(n uint64) *statsapi.PSIStats { return criPSI(criPressure(n)) }
	ioAt := epoch.Add(-time.Second)
	h.rt.Update(func(s *statstestState) {
		sb := s.SandboxStatsOf(sandboxID("uid-web")).Linux
		sb.Cpu = &runtimeapi.CpuUsage{Timestamp: epoch.UnixNano(), UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: 1}, Psi: criPressure(100)}
		sb.Memory = &runtimeapi.MemoryUsage{Timestamp: epoch.UnixNano(), Psi: criPressure(200)}
		sb.Io = &runtimeapi.IoUsage{Timestamp: ioAt.UnixNano(), Psi: criPressure(300)}
		c0 := s.ContainerStatsOf(containerID("uid-web", "c0"))
		c0.Cpu.Psi = criPressure(400)
		c0.Io = &runtimeapi.IoUsage{Timestamp: ioAt.UnixNano()} // no PSI: the cgroup's
	})
	s, err := h.provider().Get(context.Background())
	require.NoError(t, err)
	web := podByName(t, s, "web")
	require.Equal(t, fromCRI(100), web.CPU.PSI)
	require.Equal(t, fromCRI(200), web.Memory.PSI)
	requireIO(t, ioAt, fromCRI(300), web.IO)
	c0 := containerByName(t, web, "c0")
	require.Equal(t, fromCRI(400), c0.CPU.PSI)
	require.Equal(t, wantPSI(h.seed(c0Cg), psiMemory), c0.Memory.PSI, "not reported: the cgroup's")
	requireIO(t, ioAt, wantPSI(h.seed(c0Cg), psiIO), c0.IO)
}

// TestPodPressureWithoutCgroups: with no pod cgroup to read and no pressure
// from the runtime, the kubelet's CRI figures: no pressure, an IO object
// per container at the current time and per pod at its newest container's.
func TestPodPressureWithoutCgroups(t *testing.T) {
	for _, podsCgroup := range []string{"", "/kubepods"} {
		t.Run("PodsCgroup "+podsCgroup, func(t *testing.T) {
			h := newHost(t, true)
			ioAt := epoch.Add(-time.Minute)
			h.rt.Update(func(s *statstestState) {
				addPod(s, "web", 2, true)
				s.ContainerStatsOf(containerID("uid-web", "c1")).Io = &runtimeapi.IoUsage{Timestamp: ioAt.UnixNano()}
			})
			h.clock.Step(time.Second) // "now" apart from the samples' time
			p := h.provider(func(c *Config) { c.PodsCgroup = podsCgroup })
			s, err := p.Get(context.Background())
			require.NoError(t, err)
			web := podByName(t, s, "web")
			require.Nil(t, web.CPU.PSI, "not summed from containers, as the kubelet")
			require.Nil(t, web.Memory.PSI)
			requireIO(t, h.clock.Now(), nil, web.IO, "the newest container's time")
			c0, c1 := containerByName(t, web, "c0"), containerByName(t, web, "c1")
			require.Nil(t, c0.CPU.PSI)
			require.Nil(t, c0.Memory.PSI)
			requireIO(t, h.clock.Now(), nil, c0.IO)
			requireIO(t, ioAt, nil, c1.IO)
		})
	}
}

// TestPodCgroupsSystemd: the systemd driver's names for pods, QoS classes
// and containers, CRI-O's conmon scope beside its container's.
func TestPodCgroupsSystemd(t *testing.T) {
	h := newHost(t, true)
	h.podsCg = "/kubepods.slice"
	h.setCgroup(h.podsCg, time.Second, Mi, 0)
	const uid = "0f1e2d3c-aaaa-bbbb-cccc-1234567890ab"
	// A hex ID, as runtimes make them, that sorts after "conmon-".
	const ctr = "f7a3c9e1d2b4a6f8e0c1d3b5a7f9e2c4d6b8a0f1e3c5d7b9a1f2e4c6d8b0a2f4"
	h.rt.Update(func(s *statstestState) {
		s.AddPod(statstest.Pod{Name: "web", Namespace: "default", UID: uid, CreatedAt: epoch.UnixNano(), Containers: []string{"c0"}, Embed: true})
		s.Containers[0].Id = ctr
		s.ContainerStats[0].Attributes.Id = ctr
	})
	podCg := h.podsCg + "/kubepods-besteffort.slice/kubepods-besteffort-pod0f1e2d3c_aaaa_bbbb_cccc_1234567890ab.slice"
	for _, cg := range []string{h.podsCg + "/kubepods-besteffort.slice", podCg,
		podCg + "/crio-conmon-" + ctr + ".scope", podCg + "/crio-" + ctr + ".scope"} {
		h.addCgroupDir(cg)
	}
	s, err := h.provider().Get(context.Background())
	require.NoError(t, err)
	require.Equal(t, wantPSI(h.seed(podCg), psiCPU), s.Pods[0].CPU.PSI)
	require.Equal(t, wantPSI(h.seed(podCg+"/crio-"+ctr+".scope"), psiMemory), s.Pods[0].Containers[0].Memory.PSI,
		"the container's scope, not its monitor's")
}

func TestPodUIDOf(t *testing.T) {
	for _, tc := range []struct {
		name, uid string
		ok        bool
	}{
		{"pod0f1e2d3c-aaaa-bbbb-cccc-1234567890ab", "0f1e2d3c-aaaa-bbbb-cccc-1234567890ab", true},
		{"kubepods-pod0f1e2d3c_aaaa_bbbb_cccc_1234567890ab.slice", "0f1e2d3c-aaaa-bbbb-cccc-1234567890ab", true},
		{"kubepods-burstable-pod0f1e2d3c_aaaa.slice", "0f1e2d3c-aaaa", true},
		{"kubepods-burstable.slice", "", false},
		{"burstable", "", false},
		{"pod", "", false},
		{"kubepods-pod.slice", "", false},
		{"system.slice", "", false},
	} {
		uid, ok := podUIDOf(tc.name)
		require.Equal(t, tc.ok, ok, tc.name)
		require.Equal(t, tc.uid, uid, tc.name)
	}
	for name, want := range map[string]bool{"burstable": true, "besteffort": true, "kubepods-burstable.slice": true,
		"kubepods-besteffort.slice": true, "guaranteed": false, "podx": false, "kubepods-pod1.slice": false} {
		require.Equal(t, want, isQOSCgroup(name), name)
	}
}
