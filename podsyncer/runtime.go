package podsyncer

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit/nodekit/pleg"
)

// Labels and annotations the agent puts on CRI objects, named as the
// kubelet's so that crictl and other tools read them the same way.
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
	annotationHash     = "io.kubernetes.container.hash"
)

// podRuntime is what the runtime holds for one pod: its sandboxes (newest
// first), every container of the newest one (newest instance first per
// name), and the containers older sandboxes still hold (restart counts and
// last states continue across a sandbox's recreation).
type podRuntime struct {
	sandboxes []*runtimeapi.PodSandbox
	// sandboxIPs are the newest sandbox's IPs (primary first) while it is
	// ready; from the PLEG, the last known ones after it stopped.
	sandboxIPs []string
	containers []*runtimeapi.ContainerStatus
	older      []*runtimeapi.ContainerStatus
}

// nextAttempt is the attempt number of name's next instance: one past the
// highest any sandbox of the pod has seen.
func (p *podRuntime) nextAttempt(name string) uint32 {
	var next uint32
	for _, list := range [][]*runtimeapi.ContainerStatus{p.containers, p.older} {
		for _, c := range list {
			if c.GetMetadata().GetName() == name {
				next = max(next, c.GetMetadata().GetAttempt()+1)
			}
		}
	}
	return next
}

// ready returns the newest sandbox if it is ready.
func (p *podRuntime) readySandbox() *runtimeapi.PodSandbox {
	if len(p.sandboxes) > 0 && p.sandboxes[0].State == runtimeapi.PodSandboxState_SANDBOX_READY {
		return p.sandboxes[0]
	}
	return nil
}

// latest returns the newest instance of the named container.
func (p *podRuntime) latest(name string) *runtimeapi.ContainerStatus {
	for _, c := range p.containers {
		if c.GetMetadata().GetName() == name {
			return c
		}
	}
	return nil
}

// previous returns the instance before the newest one.
func (p *podRuntime) previous(name string) *runtimeapi.ContainerStatus {
	seen := false
	for _, c := range p.containers {
		if c.GetMetadata().GetName() == name {
			if seen {
				return c
			}
			seen = true
		}
	}
	for _, c := range p.older {
		if c.GetMetadata().GetName() == name {
			return c
		}
	}
	return nil
}

// inspect reads a pod's runtime state through the CRI.
// runtimeState is the pod's runtime state: from the PLEG cache, after a
// relist of the pod if the syncer changed it (relist); listed directly when
// the syncer has no PLEG (tests).
func (s *Syncer) runtimeState(ctx context.Context, uid types.UID, relist bool) (*podRuntime, error) {
	if s.states == nil {
		return inspect(ctx, s.rt, uid)
	}
	if relist {
		if _, err := s.states.RelistPod(ctx, uid); err != nil {
			return nil, err
		}
	}
	ps, err := s.states.PodStatus(uid)
	if err != nil {
		return nil, fmt.Errorf("runtime status of pod %s: %w", uid, err)
	}
	return fromPLEG(ps), nil
}

func inspect(ctx context.Context, rt criapi.RuntimeService, uid types.UID) (*podRuntime, error) {
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelPodUID: string(uid)}})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	slices.SortFunc(sbs, func(a, b *runtimeapi.PodSandbox) int { return cmpInt64(b.CreatedAt, a.CreatedAt) })
	p := &podRuntime{sandboxes: sbs}
	if len(sbs) == 0 {
		return p, nil
	}
	if sbs[0].State == runtimeapi.PodSandboxState_SANDBOX_READY {
		if st, err := rt.PodSandboxStatus(ctx, sbs[0].Id, false); err == nil {
			p.sandboxIPs = pleg.SandboxIPs(st.GetStatus())
		}
	}
	filter := &runtimeapi.ContainerFilter{PodSandboxId: sbs[0].Id}
	if len(sbs) > 1 {
		filter = &runtimeapi.ContainerFilter{LabelSelector: map[string]string{labelPodUID: string(uid)}}
	}
	cs, err := rt.ListContainers(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs {
		st, err := rt.ContainerStatus(ctx, c.Id, false)
		if err != nil {
			continue // removed between list and status: it is gone
		}
		if c.PodSandboxId == sbs[0].Id {
			p.containers = append(p.containers, st.GetStatus())
		} else {
			p.older = append(p.older, st.GetStatus())
		}
	}
	slices.SortFunc(p.containers, newestFirst)
	slices.SortFunc(p.older, newestFirst)
	return p, nil
}

// fromPLEG is the pod's runtime state as the PLEG holds it: sandboxes
// newest first; the containers created since the newest sandbox are that
// sandbox's, the others belong to older ones.
func fromPLEG(ps *pleg.PodStatus) *podRuntime {
	p := &podRuntime{}
	statuses := slices.Clone(ps.SandboxStatuses)
	slices.SortStableFunc(statuses, func(a, b *runtimeapi.PodSandboxStatus) int { return cmpInt64(b.CreatedAt, a.CreatedAt) })
	for _, s := range statuses {
		p.sandboxes = append(p.sandboxes, &runtimeapi.PodSandbox{Id: s.Id, Metadata: s.Metadata, State: s.State,
			CreatedAt: s.CreatedAt, Labels: s.Labels, Annotations: s.Annotations, RuntimeHandler: s.RuntimeHandler})
	}
	newest := int64(math.MaxInt64)
	if len(statuses) > 0 {
		newest = statuses[0].CreatedAt
	}
	p.sandboxIPs = ps.IPs // kept by the PLEG after the sandbox stopped, as upstream's
	for _, c := range ps.ContainerStatuses {
		if c.CreatedAt >= newest {
			p.containers = append(p.containers, c)
		} else {
			p.older = append(p.older, c)
		}
	}
	slices.SortStableFunc(p.containers, newestFirst)
	slices.SortStableFunc(p.older, newestFirst)
	return p
}

// attemptsInLogDir is one past the highest attempt whose log file
// (<attempt>.log, or a rotated <attempt>.log.<suffix>) is in dir, 0 when
// there is none: the kubelet's restart count of a container the runtime no
// longer holds.
func attemptsInLogDir(dir string) uint32 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var next uint32
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		num, rest, ok := strings.Cut(e.Name(), ".log")
		if !ok || (rest != "" && rest[0] != '.') {
			continue
		}
		n, err := strconv.ParseUint(num, 10, 32)
		if err != nil || n >= math.MaxUint32 {
			continue
		}
		next = max(next, uint32(n)+1)
	}
	return next
}

func newestFirst(a, b *runtimeapi.ContainerStatus) int {
	if a.GetMetadata().GetAttempt() != b.GetMetadata().GetAttempt() {
		return int(b.GetMetadata().GetAttempt()) - int(a.GetMetadata().GetAttempt())
	}
	return cmpInt64(b.CreatedAt, a.CreatedAt)
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// containerHash fingerprints the parts of a container spec whose change
// requires a restart.
func containerHash(c *v1.Container) string {
	b, _ := json.Marshal(struct {
		Image   string
		Command []string
		Args    []string
		Env     []v1.EnvVar
		Ports   []v1.ContainerPort
	}{c.Image, c.Command, c.Args, c.Env, c.Ports})
	h := fnv.New32a()
	_, _ = h.Write(b)
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}

// PodLogDir is the kubelet's log directory of a pod under the pods log
// root: <root>/<namespace>_<name>_<uid>.
func PodLogDir(root string, pod *v1.Pod) string {
	return filepath.Join(root, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
}

func sandboxConfig(pod *v1.Pod, attempt uint32, logsDir string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		Hostname:     pod.Name,
		LogDirectory: PodLogDir(logsDir, pod),
		Labels:       map[string]string{labelPodName: pod.Name, labelPodNamespace: pod.Namespace, labelPodUID: string(pod.UID)},
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
		PortMappings: portMappings(pod),
	}
}

// portMappings are the app containers' ports for the runtime (its CNI
// port mapping publishes those with a host port), a port named twice in a
// container counted once, as the kubelet does.
func portMappings(pod *v1.Pod) []*runtimeapi.PortMapping {
	var out []*runtimeapi.PortMapping
	for _, c := range pod.Spec.Containers {
		seen := map[string]bool{}
		for _, p := range c.Ports {
			family := "any"
			if p.HostIP != "" {
				family = "v4"
				if ip := net.ParseIP(p.HostIP); ip != nil && ip.To4() == nil {
					family = "v6"
				}
			}
			name := p.Name
			if name == "" {
				name = fmt.Sprintf("%s-%s-%s:%d:%d", family, p.Protocol, p.HostIP, p.ContainerPort, p.HostPort)
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			proto := runtimeapi.Protocol_TCP
			switch p.Protocol {
			case v1.ProtocolUDP:
				proto = runtimeapi.Protocol_UDP
			case v1.ProtocolSCTP:
				proto = runtimeapi.Protocol_SCTP
			}
			out = append(out, &runtimeapi.PortMapping{Protocol: proto, ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP})
		}
	}
	return out
}

// keyValues is env as CRI key/values, sorted by name.
func keyValues(vars map[string]string) []*runtimeapi.KeyValue {
	out := make([]*runtimeapi.KeyValue, 0, len(vars))
	for k, v := range vars {
		out = append(out, &runtimeapi.KeyValue{Key: k, Value: []byte(v)})
	}
	slices.SortFunc(out, func(a, b *runtimeapi.KeyValue) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// containerConfig is the part of a container's CRI config that comes from
// its spec alone; the syncer adds env, expanded command/args and mounts.
func containerConfig(pod *v1.Pod, c *v1.Container, attempt uint32) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: attempt},
		Image:    &runtimeapi.ImageSpec{Image: c.Image},
		Command:  c.Command,
		Args:     c.Args,
		Labels: map[string]string{labelPodName: pod.Name, labelPodNamespace: pod.Namespace, labelPodUID: string(pod.UID),
			labelContainerName: c.Name},
		Annotations: map[string]string{annotationHash: containerHash(c)},
		LogPath:     c.Name + "/" + strconv.Itoa(int(attempt)) + ".log",
		WorkingDir:  c.WorkingDir,
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux:       &runtimeapi.LinuxContainerConfig{},
	}
}

// namespaces are the pod's Linux namespaces: the node's network, PID and
// IPC namespaces where the pod asks for them, the pod's own otherwise
// (one PID namespace per container unless shareProcessNamespace).
func namespaces(pod *v1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER,
		Ipc: runtimeapi.NamespaceMode_POD}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns
}
