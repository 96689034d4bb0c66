package containergc

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// DefaultMaxPerPodContainer is the kubelet's: one dead instance per
// container is kept.
const DefaultMaxPerPodContainer = 1

// Policy is what Select keeps.
type Policy struct {
	// MaxPerPodContainer dead instances are kept per container of a pod
	// that exists. Zero means DefaultMaxPerPodContainer; negative keeps
	// none.
	MaxPerPodContainer int
}

// Selection is what to remove, by runtime ID.
type Selection struct {
	Containers []string
	Sandboxes  []string
}

// Labels the kubelet (and this agent) puts on containers and sandboxes.
const (
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
)

// Select picks the dead containers and sandboxes to remove. podExists
// reports whether a pod is still wanted on the node (its dead instances
// beyond the policy go; a gone pod's go entirely).
func Select(p Policy, containers []*runtimeapi.Container, sandboxes []*runtimeapi.PodSandbox, podExists func(types.UID) bool) Selection {
	keep := p.MaxPerPodContainer
	switch {
	case keep == 0:
		keep = DefaultMaxPerPodContainer
	case keep < 0:
		keep = 0
	}
	var sel Selection
	type key struct {
		uid  types.UID
		name string
	}
	dead := map[key][]*runtimeapi.Container{}
	inSandbox := map[string]int{} // containers left per sandbox
	for _, c := range containers {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING || c.State == runtimeapi.ContainerState_CONTAINER_UNKNOWN {
			inSandbox[c.PodSandboxId]++
			continue
		}
		k := key{types.UID(c.Labels[labelPodUID]), name(c)}
		dead[k] = append(dead[k], c)
	}
	for k, cs := range dead {
		sort.Slice(cs, func(i, j int) bool { return cs[i].CreatedAt > cs[j].CreatedAt })
		n := keep
		if !podExists(k.uid) {
			n = 0
		}
		for i, c := range cs {
			if i < n {
				inSandbox[c.PodSandboxId]++
				continue
			}
			sel.Containers = append(sel.Containers, c.Id)
		}
	}
	newest := map[types.UID]*runtimeapi.PodSandbox{}
	for _, sb := range sandboxes {
		u := types.UID(sb.GetMetadata().GetUid())
		if n := newest[u]; n == nil || sb.CreatedAt > n.CreatedAt {
			newest[u] = sb
		}
	}
	for _, sb := range sandboxes {
		u := types.UID(sb.GetMetadata().GetUid())
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY || inSandbox[sb.Id] > 0 {
			continue
		}
		if podExists(u) && newest[u] == sb {
			continue
		}
		sel.Sandboxes = append(sel.Sandboxes, sb.Id)
	}
	sort.Strings(sel.Containers)
	sort.Strings(sel.Sandboxes)
	return sel
}

func name(c *runtimeapi.Container) string {
	if n := c.GetMetadata().GetName(); n != "" {
		return n
	}
	return c.Labels[labelContainerName]
}

// Runtime is the part of the CRI runtime service Collect uses.
type Runtime interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	RemoveContainer(ctx context.Context, containerID string) error
	RemovePodSandbox(ctx context.Context, podSandboxID string) error
}

// Collect lists the runtime, selects with p and removes the selection:
// containers first, then sandboxes. It goes on past a failed removal and
// returns every error.
func Collect(ctx context.Context, rt Runtime, p Policy, podExists func(types.UID) bool) (Selection, error) {
	cs, err := rt.ListContainers(ctx, nil)
	if err != nil {
		return Selection{}, fmt.Errorf("container GC: list containers: %w", err)
	}
	sbs, err := rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return Selection{}, fmt.Errorf("container GC: list sandboxes: %w", err)
	}
	sel := Select(p, cs, sbs, podExists)
	var errs []error
	for _, id := range sel.Containers {
		if err := rt.RemoveContainer(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("remove container %s: %w", id, err))
		}
	}
	for _, id := range sel.Sandboxes {
		if err := rt.RemovePodSandbox(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", id, err))
		}
	}
	if n := len(sel.Containers) + len(sel.Sandboxes); n > 0 {
		klog.FromContext(ctx).V(2).Info("Container GC", "containers", len(sel.Containers), "sandboxes", len(sel.Sandboxes))
	}
	if err := errors.Join(errs...); err != nil {
		return sel, fmt.Errorf("container GC: %w", err)
	}
	return sel, nil
}
