package stats

import (
	"errors"
	"path/filepath"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// containerPressure sets a container's CPU and memory pressure and, in a
// full pass, its IO: the runtime's figures where it reports them, else
// those of the container's cgroup (zeros on cgroup v1, as cadvisor's), else
// none. Like the kubelet's, a full pass always has an IO object, at the
// current time when nothing else is known.
func (pp *podPass) containerPressure(cs *statsapi.ContainerStats, sb *runtimeapi.PodSandbox, s *runtimeapi.ContainerStats, id string) {
	cs.CPU.PSI = criPSI(s.GetCpu().GetPsi())
	cs.Memory.PSI = criPSI(s.GetMemory().GetPsi())
	if pp.full {
		cs.IO = &statsapi.IOStats{Time: metav1.NewTime(pp.now)}
		if io := s.GetIo(); io != nil {
			cs.IO = &statsapi.IOStats{Time: criTime(io.Timestamp, pp.now), PSI: criPSI(io.Psi)}
		}
	}
	if !pp.lacksPressure(cs.CPU, cs.Memory, cs.IO) {
		return
	}
	if cg, ok := pp.cgroupOf(sb, id); ok {
		pp.cgroupPressure(cg, cs.CPU, cs.Memory, &cs.IO)
	}
}

// podPressure sets a pod's CPU and memory pressure and, in a full pass, its
// IO: the sandbox's figures where the runtime reports them (lx may be nil),
// else those of the pod's cgroup. A pod with neither has no pressure (the
// kubelet does not sum its containers'), and in a full pass an IO object
// timed as its newest container's, as the kubelet's when cadvisor does not
// know the pod's cgroup.
func (pp *podPass) podPressure(ps *statsapi.PodStats, sb *runtimeapi.PodSandbox, lx *runtimeapi.LinuxPodSandboxStats) {
	if ps.CPU != nil {
		ps.CPU.PSI = criPSI(lx.GetCpu().GetPsi())
	}
	if ps.Memory != nil {
		ps.Memory.PSI = criPSI(lx.GetMemory().GetPsi())
	}
	if io := lx.GetIo(); pp.full && io != nil {
		ps.IO = &statsapi.IOStats{Time: criTime(io.Timestamp, pp.now), PSI: criPSI(io.Psi)}
	}
	if pp.lacksPressure(ps.CPU, ps.Memory, ps.IO) {
		if cg, ok := pp.cgroups.pod(sb.Metadata.Uid); ok {
			pp.cgroupPressure(cg, ps.CPU, ps.Memory, &ps.IO)
		}
	}
	if pp.full && ps.IO == nil {
		for _, c := range ps.Containers {
			if c.IO != nil {
				if ps.IO == nil {
					ps.IO = &statsapi.IOStats{}
				}
				ps.IO.Time = latest(ps.IO.Time, c.IO.Time)
			}
		}
	}
}

// lacksPressure: a figure present has no pressure yet (IO counts in a full
// pass only, where a missing IO object lacks it too).
func (pp *podPass) lacksPressure(cpu *statsapi.CPUStats, mem *statsapi.MemoryStats, io *statsapi.IOStats) bool {
	return cpu != nil && cpu.PSI == nil || mem != nil && mem.PSI == nil || pp.full && (io == nil || io.PSI == nil)
}

// cgroupPressure fills the pressure cpu, mem and (in a full pass) *io lack
// from cgroup's files; a missing *io is created at the current time when
// the cgroup has an IO controller directory. A cgroup that cannot be read
// leaves them as they are.
func (pp *podPass) cgroupPressure(cgroup string, cpu *statsapi.CPUStats, mem *statsapi.MemoryStats, io **statsapi.IOStats) {
	pr, err := pp.cgroups.fs.readPressure(cgroup, pp.full)
	if err != nil {
		if !errors.Is(err, errNoCgroup) { // else gone since it was listed
			klog.FromContext(pp.ctx).V(4).Info("Cannot read cgroup pressure", "cgroup", cgroup, "err", err)
		}
		return
	}
	if cpu != nil && cpu.PSI == nil {
		cpu.PSI = pr.cpu
	}
	if mem != nil && mem.PSI == nil {
		mem.PSI = pr.memory
	}
	if !pp.full {
		return
	}
	switch {
	case *io == nil:
		*io = ioStats(pr.io, metav1.NewTime(pp.now))
	case (*io).PSI == nil:
		(*io).PSI = pr.io
	}
}

// cgroupOf is the cgroup of the container or sandbox id of sb.
func (pp *podPass) cgroupOf(sb *runtimeapi.PodSandbox, id string) (string, bool) {
	podCg, ok := pp.cgroups.pod(sb.Metadata.Uid)
	if !ok {
		return "", false
	}
	return pp.cgroups.child(podCg, id)
}

// podNetwork is a pod's network: every interface of the sandbox's network
// namespace, as cadvisor lists them from the sandbox's process (without
// loopback, veths and docker/nerdctl bridges), when its cgroup and process
// are found; else the runtime's interfaces (criNetwork). The top-level
// (default) interface and the time are the runtime's when it reports them,
// else eth0's and now.
func (pp *podPass) podNetwork(sb *runtimeapi.PodSandbox, n *runtimeapi.NetworkUsage) *statsapi.NetworkStats {
	fromCRI := criNetwork(n, pp.now)
	ifaces := pp.sandboxInterfaces(sb)
	if len(ifaces) == 0 {
		return fromCRI
	}
	out := netStats(ifaces, metav1.NewTime(pp.now))
	if fromCRI != nil {
		out.Time = fromCRI.Time
		if n.DefaultInterface != nil {
			out.InterfaceStats = fromCRI.InterfaceStats
		}
	}
	return out
}

// sandboxInterfaces reads the interfaces of the network namespace of the
// first process in sb's cgroup; nil when any of that cannot be found.
func (pp *podPass) sandboxInterfaces(sb *runtimeapi.PodSandbox) []netInterface {
	cg, ok := pp.cgroupOf(sb, sb.Id)
	if !ok {
		return nil
	}
	logger := klog.FromContext(pp.ctx)
	pid, err := pp.cgroups.fs.firstPID(cg)
	if err != nil {
		logger.V(4).Info("Cannot find the sandbox's process", "podSandboxID", sb.Id, "cgroup", cg, "err", err)
		return nil
	}
	ifaces, err := readNetDevFile(filepath.Join(pp.p.cfg.ProcPath, strconv.Itoa(pid), "net", "dev"))
	if err != nil {
		logger.V(4).Info("Cannot read the sandbox's network interfaces", "podSandboxID", sb.Id, "pid", pid, "err", err)
		return nil
	}
	return ifaces
}
