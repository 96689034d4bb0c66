package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
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
// first) and every container of the newest one (newest instance first per
// name).
type podRuntime struct {
	sandboxes  []*runtimeapi.PodSandbox
	sandboxIP  string
	containers []*runtimeapi.ContainerStatus
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
	return nil
}

// inspect reads a pod's runtime state through the CRI.
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
	st, err := rt.PodSandboxStatus(ctx, sbs[0].Id, false)
	if err == nil && st.GetStatus().GetNetwork() != nil {
		p.sandboxIP = st.GetStatus().GetNetwork().GetIp()
	}
	cs, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: sbs[0].Id})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs {
		st, err := rt.ContainerStatus(ctx, c.Id, false)
		if err != nil {
			continue // removed between list and status: it is gone
		}
		p.containers = append(p.containers, st.GetStatus())
	}
	slices.SortFunc(p.containers, func(a, b *runtimeapi.ContainerStatus) int {
		if a.GetMetadata().GetAttempt() != b.GetMetadata().GetAttempt() {
			return int(b.GetMetadata().GetAttempt()) - int(a.GetMetadata().GetAttempt())
		}
		return cmpInt64(b.CreatedAt, a.CreatedAt)
	})
	return p, nil
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
	}
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
