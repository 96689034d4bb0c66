package admission

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// ReasonSysctlForbidden is the reason of a pod rejected for its sysctls.
const ReasonSysctlForbidden = "SysctlForbidden"

// safeSysctls is the kubelet's safe set: namespaced sysctls that cannot
// harm other pods, each with the first kernel that namespaces it.
var safeSysctls = []struct{ name, kernel string }{
	{"kernel.shm_rmid_forced", ""},
	{"net.ipv4.ip_local_port_range", ""},
	{"net.ipv4.tcp_syncookies", ""},
	{"net.ipv4.ping_group_range", ""},
	{"net.ipv4.ip_unprivileged_port_start", ""},
	{"net.ipv4.ip_local_reserved_ports", "3.16"},
	{"net.ipv4.tcp_keepalive_time", "4.5"},
	{"net.ipv4.tcp_fin_timeout", "4.6"},
	{"net.ipv4.tcp_keepalive_intvl", "4.5"},
	{"net.ipv4.tcp_keepalive_probes", "4.5"},
	{"net.ipv4.tcp_rmem", "4.15"},
	{"net.ipv4.tcp_wmem", "4.15"},
}

// SafeSysctls returns the kubelet's safe sysctls that the given kernel
// namespaces; with a nil kernel only those every kernel namespaces.
func SafeSysctls(kernel *version.Version) []string {
	var out []string
	for _, s := range safeSysctls {
		if s.kernel == "" || kernel != nil && kernel.AtLeast(version.MustParseGeneric(s.kernel)) {
			out = append(out, s.name)
		}
	}
	return out
}

// KernelVersion reads the running kernel's version from
// /proc/sys/kernel/osrelease.
func KernelVersion() (*version.Version, error) {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return nil, err
	}
	return version.ParseGeneric(strings.TrimSpace(string(b)))
}

// sysctlPattern is what a sysctl name or prefix pattern may look like:
// dot- or slash-separated segments, an optional trailing "*".
var sysctlPattern = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*([a-z0-9]([-_a-z0-9]*[a-z0-9])?)?\*?$`)

// Sysctls returns a Handler that admits a pod only if each of its sysctls
// matches one of patterns (names, or prefixes ending in "*", as
// --allowed-unsafe-sysctls takes them; pass SafeSysctls too for the
// kubelet's behaviour) and is in a namespace the pod does not share with
// the host. A pattern that is malformed or not known to be namespaced is
// an error.
func Sysctls(patterns []string) (Handler, error) {
	h := &sysctls{names: map[string]utilsysctl.Namespace{}, prefixes: map[string]utilsysctl.Namespace{}}
	for _, p := range patterns {
		if len(p) > 253 || p == "*" || !sysctlPattern.MatchString(p) {
			return nil, fmt.Errorf("admission: sysctl pattern %q is not a sysctl name or prefix (a.b.c, a/b/c or a.b.*)", p)
		}
		ns, nameOrPrefix, prefixed := utilsysctl.GetNamespace(p)
		if ns == utilsysctl.UnknownNamespace {
			return nil, fmt.Errorf("admission: the sysctls %q are not known to be namespaced", nameOrPrefix)
		}
		if prefixed {
			h.prefixes[nameOrPrefix] = ns
		} else {
			h.names[nameOrPrefix] = ns
		}
	}
	return h, nil
}

type sysctls struct {
	names, prefixes map[string]utilsysctl.Namespace
}

func (h *sysctls) Admit(_ context.Context, attrs Attributes) Result {
	sc := attrs.Pod.Spec.SecurityContext
	if sc == nil {
		return Admitted()
	}
	for _, s := range sc.Sysctls {
		if err := h.allowed(s.Name, attrs.Pod.Spec.HostNetwork, attrs.Pod.Spec.HostIPC); err != nil {
			return Result{Reason: ReasonSysctlForbidden, Message: "forbidden sysctl: " + err.Error()}
		}
	}
	return Admitted()
}

func (h *sysctls) allowed(name string, hostNet, hostIPC bool) error {
	name = utilsysctl.NormalizeName(name)
	check := func(ns utilsysctl.Namespace) error {
		if ns == utilsysctl.IPCNamespace && hostIPC || ns == utilsysctl.NetNamespace && hostNet {
			return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
		}
		return nil
	}
	if ns, ok := h.names[name]; ok {
		return check(ns)
	}
	for p, ns := range h.prefixes {
		if strings.HasPrefix(name, p) {
			return check(ns)
		}
	}
	return fmt.Errorf("%q not allowlisted", name)
}
