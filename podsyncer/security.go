package podsyncer

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit/nodekit/cgroups"
)

// Paths of /proc and /sys a container sees masked or read-only unless its
// procMount is Unmasked (the kubelet's defaults).
var (
	baseMaskedPaths = []string{"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap"}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// DefaultMaskedPaths is the kubelet's masked list on this machine: the
// base list plus each CPU's thermal_throttle directory that exists (it
// reads /sys).
func DefaultMaskedPaths() []string {
	out := append([]string(nil), baseMaskedPaths...)
	possible, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return out
	}
	for _, r := range strings.Split(strings.TrimSpace(string(possible)), ",") {
		lo, hi, found := strings.Cut(r, "-")
		first, err1 := strconv.Atoi(lo)
		last := first
		var err2 error
		if found {
			last, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil {
			continue
		}
		for cpu := first; cpu <= last; cpu++ {
			p := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/thermal_throttle", cpu)
			if _, err := os.Stat(p); err == nil {
				out = append(out, p)
			}
		}
	}
	return out
}

// effectiveSecurity is the container's security context with the pod's
// settings filled in where the container has none.
func effectiveSecurity(pod *v1.Pod, c *v1.Container) *v1.SecurityContext {
	sc := &v1.SecurityContext{}
	if c.SecurityContext != nil {
		sc = c.SecurityContext.DeepCopy()
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return sc
	}
	if sc.RunAsUser == nil {
		sc.RunAsUser = psc.RunAsUser
	}
	if sc.RunAsGroup == nil {
		sc.RunAsGroup = psc.RunAsGroup
	}
	if sc.RunAsNonRoot == nil {
		sc.RunAsNonRoot = psc.RunAsNonRoot
	}
	if sc.SELinuxOptions == nil {
		sc.SELinuxOptions = psc.SELinuxOptions
	}
	if sc.SeccompProfile == nil {
		sc.SeccompProfile = psc.SeccompProfile
	}
	if sc.AppArmorProfile == nil {
		sc.AppArmorProfile = psc.AppArmorProfile
	}
	return sc
}

// containerSecurity is the CRI security context of c: identity (user,
// groups with the fsGroup), privilege, capabilities, no_new_privs,
// read-only root, masked /proc paths, seccomp and AppArmor profiles,
// SELinux options and namespaces.
func (s *Syncer) containerSecurity(pod *v1.Pod, c *v1.Container) *runtimeapi.LinuxContainerSecurityContext {
	eff := effectiveSecurity(pod, c)
	sc := &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: namespaces(pod)}
	if eff.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *eff.RunAsUser}
	}
	if eff.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *eff.RunAsGroup}
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		sc.SupplementalGroups = append(sc.SupplementalGroups, psc.SupplementalGroups...)
		if psc.FSGroup != nil {
			sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
		}
		if psc.SupplementalGroupsPolicy != nil && *psc.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict {
			sc.SupplementalGroupsPolicy = runtimeapi.SupplementalGroupsPolicy_Strict
		}
	}
	sc.Privileged = eff.Privileged != nil && *eff.Privileged
	sc.ReadonlyRootfs = eff.ReadOnlyRootFilesystem != nil && *eff.ReadOnlyRootFilesystem
	sc.NoNewPrivs = eff.AllowPrivilegeEscalation != nil && !*eff.AllowPrivilegeEscalation
	if caps := eff.Capabilities; caps != nil {
		sc.Capabilities = &runtimeapi.Capability{}
		for _, a := range caps.Add {
			sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(a))
		}
		for _, d := range caps.Drop {
			sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(d))
		}
	}
	if eff.ProcMount != nil && *eff.ProcMount == v1.UnmaskedProcMount {
		sc.MaskedPaths, sc.ReadonlyPaths = []string{}, []string{}
	} else {
		sc.MaskedPaths, sc.ReadonlyPaths = s.maskedPaths(), defaultReadonlyPaths
	}
	if o := eff.SELinuxOptions; o != nil {
		sc.SelinuxOptions = &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
	}
	sc.Seccomp = s.seccomp(eff.SeccompProfile)
	sc.Apparmor = apparmor(eff.AppArmorProfile)
	return sc
}

// sandboxSecurity is the pod-level CRI security context: the pod's
// identity and namespaces, privileged if any container is.
func (s *Syncer) sandboxSecurity(pod *v1.Pod) *runtimeapi.LinuxSandboxSecurityContext {
	sc := &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: namespaces(pod)}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
		}
		sc.SupplementalGroups = append(sc.SupplementalGroups, psc.SupplementalGroups...)
		if psc.FSGroup != nil {
			sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
		}
		if o := psc.SELinuxOptions; o != nil {
			sc.SelinuxOptions = &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
		}
		sc.Seccomp = s.seccomp(psc.SeccompProfile)
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
				sc.Privileged = true
			}
		}
	}
	return sc
}

// seccomp maps a seccomp profile; unset is Unconfined (the kubelet's
// default without --seccomp-default).
func (s *Syncer) seccomp(p *v1.SeccompProfile) *runtimeapi.SecurityProfile {
	if p == nil {
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	case v1.SeccompProfileTypeLocalhost:
		ref := ""
		if p.LocalhostProfile != nil {
			ref = filepath.Join(s.seccompRoot, *p.LocalhostProfile)
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: ref}
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
}

// apparmor maps an AppArmor profile; unset leaves the runtime's default.
func apparmor(p *v1.AppArmorProfile) *runtimeapi.SecurityProfile {
	if p == nil {
		return nil
	}
	switch p.Type {
	case v1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	case v1.AppArmorProfileTypeLocalhost:
		ref := ""
		if p.LocalhostProfile != nil {
			ref = *p.LocalhostProfile
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: ref}
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
}

// verifyRunAsNonRoot refuses to start a container that must not run as
// root but would (uid and username are the image's user; neither set
// means root), with the kubelet's messages.
func verifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, uid *int64, username string) error {
	eff := effectiveSecurity(pod, c)
	if eff.RunAsNonRoot == nil || !*eff.RunAsNonRoot {
		return nil
	}
	podName := fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
	if eff.RunAsUser != nil {
		if *eff.RunAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podName, c.Name)
		}
		return nil
	}
	switch {
	case uid == nil && username != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", username, podName, c.Name)
	case uid == nil || *uid == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podName, c.Name)
	}
	return nil
}

// The kubelet's OOM score adjustments.
const (
	guaranteedOOMScoreAdj  = -997
	besteffortOOMScoreAdj  = 1000
	minBurstableOOMAdjPlus = 1000 + guaranteedOOMScoreAdj
)

// linuxResources converts a CPU request (nil when none was given), CPU
// limit and memory limit to CRI resources as the kubelet does: shares from
// the request (from the limit when there is no request), a CFS quota from
// the CPU limit, the memory limit.
func linuxResources(cpuReq *resource.Quantity, cpuLim, memLim resource.Quantity) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{}
	if cpuReq == nil && !cpuLim.IsZero() {
		r.CpuShares = int64(cgroups.SharesFromMilliCPU(cpuLim.MilliValue()))
	} else {
		var milli int64
		if cpuReq != nil {
			milli = cpuReq.MilliValue()
		}
		r.CpuShares = int64(cgroups.SharesFromMilliCPU(milli))
	}
	if !cpuLim.IsZero() {
		r.CpuPeriod = cgroups.QuotaPeriod
		r.CpuQuota = cgroups.QuotaFromMilliCPU(cpuLim.MilliValue(), cgroups.QuotaPeriod)
	}
	if !memLim.IsZero() {
		r.MemoryLimitInBytes = memLim.Value()
	}
	return r
}

// containerResources is the CRI resources (linuxResources) of container c
// of pod, the pod-level limits standing in for those c does not set, with
// the OOM score adjustment of its QoS class (Burstable by memory request
// against memCapacity).
func containerResources(pod *v1.Pod, c *v1.Container, qos v1.PodQOSClass, memCapacity int64) *runtimeapi.LinuxContainerResources {
	var req *resource.Quantity
	if q, ok := c.Resources.Requests[v1.ResourceCPU]; ok {
		req = &q
	}
	eff := effectiveResources(pod, c)
	r := linuxResources(req, eff.Limits[v1.ResourceCPU], eff.Limits[v1.ResourceMemory])
	switch qos {
	case v1.PodQOSGuaranteed:
		r.OomScoreAdj = guaranteedOOMScoreAdj
	case v1.PodQOSBestEffort:
		r.OomScoreAdj = besteffortOOMScoreAdj
	default:
		adj := int64(besteffortOOMScoreAdj)
		if memCapacity > 0 {
			adj = 1000 - 1000*c.Resources.Requests.Memory().Value()/memCapacity
		}
		switch {
		case adj < minBurstableOOMAdjPlus:
			adj = minBurstableOOMAdjPlus
		case adj >= besteffortOOMScoreAdj:
			adj = besteffortOOMScoreAdj - 1
		}
		r.OomScoreAdj = adj
	}
	return r
}

// sandboxResources are the pod's summed resources without overhead, and
// its overhead on its own, for the CRI sandbox config (the runtime may
// size the sandbox by them; the pod cgroup is the agent's).
func sandboxResources(pod *v1.Pod) (res, overhead *runtimeapi.LinuxContainerResources) {
	opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: true}
	reqs, lims := resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts)
	var cpuReq *resource.Quantity
	if q, ok := reqs[v1.ResourceCPU]; ok {
		cpuReq = &q
	}
	res = linuxResources(cpuReq, lims[v1.ResourceCPU], lims[v1.ResourceMemory])
	overhead = &runtimeapi.LinuxContainerResources{}
	if pod.Spec.Overhead != nil {
		cpu := pod.Spec.Overhead[v1.ResourceCPU]
		overhead = linuxResources(&cpu, cpu, pod.Spec.Overhead[v1.ResourceMemory])
	}
	return res, overhead
}
