package plegtest

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit/nodekit/pleg"
)

// The RuntimeService methods, as InjectError, Block and Calls name them.
const (
	methodListPodSandbox     = "ListPodSandbox"
	methodListContainers     = "ListContainers"
	methodPodSandboxStatus   = "PodSandboxStatus"
	methodContainerStatus    = "ContainerStatus"
	methodGetContainerEvents = "GetContainerEvents"
)

// ListPodSandbox implements pleg.RuntimeService: the sandboxes matching
// filter (nil: all) in creation order. The filter's Id, State and
// LabelSelector (every pair must match) are honoured.
func (r *Runtime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	if err := r.begin(ctx, methodListPodSandbox); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.PodSandbox
	for _, sb := range r.sandboxes {
		if filter != nil {
			if (filter.Id != "" && filter.Id != sb.id) ||
				(filter.State != nil && filter.State.State != sb.state) ||
				!matches(sb.labels(), filter.LabelSelector) {
				continue
			}
		}
		out = append(out, &runtimeapi.PodSandbox{
			Id:        sb.id,
			Metadata:  sb.metadata(),
			State:     sb.state,
			CreatedAt: sb.createdAt,
			Labels:    sb.labels(),
		})
	}
	return out, nil
}

// ListContainers implements pleg.RuntimeService: the containers matching
// filter (nil: all) in creation order. The filter's Id, State, PodSandboxId
// and LabelSelector (every pair must match) are honoured.
func (r *Runtime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	if err := r.begin(ctx, methodListContainers); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.Container
	for _, c := range r.containers {
		if filter != nil {
			if (filter.Id != "" && filter.Id != c.id) ||
				(filter.State != nil && filter.State.State != c.state) ||
				(filter.PodSandboxId != "" && filter.PodSandboxId != c.sandboxID) ||
				!matches(c.labels(), filter.LabelSelector) {
				continue
			}
		}
		out = append(out, &runtimeapi.Container{
			Id:           c.id,
			PodSandboxId: c.sandboxID,
			Metadata:     c.metadata(),
			Image:        &runtimeapi.ImageSpec{Image: Image},
			ImageRef:     Image,
			State:        c.state,
			CreatedAt:    c.createdAt,
			Labels:       c.labels(),
		})
	}
	return out, nil
}

// PodSandboxStatus implements pleg.RuntimeService. An unknown ID is a gRPC
// NotFound error, as CRI runtimes answer.
func (r *Runtime) PodSandboxStatus(ctx context.Context, podSandboxID string, _ bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := r.begin(ctx, methodPodSandboxStatus); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sb := r.sandboxLocked(podSandboxID)
	if sb == nil {
		return nil, status.Errorf(codes.NotFound, "plegtest: pod sandbox %q not found", podSandboxID)
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: sb.status()}, nil
}

// ContainerStatus implements pleg.RuntimeService. An unknown ID is a gRPC
// NotFound error, as CRI runtimes answer.
func (r *Runtime) ContainerStatus(ctx context.Context, containerID string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	if err := r.begin(ctx, methodContainerStatus); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.containerLocked(containerID)
	if c == nil {
		return nil, status.Errorf(codes.NotFound, "plegtest: container %q not found", containerID)
	}
	return &runtimeapi.ContainerStatusResponse{Status: c.status()}, nil
}

// matches reports whether labels hold every pair of selector.
func matches(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// ctxErr is the gRPC status error a CRI client returns when ctx ends.
func ctxErr(ctx context.Context) error {
	return status.FromContextError(ctx.Err()).Err()
}

func (sb *sandbox) metadata() *runtimeapi.PodSandboxMetadata {
	return &runtimeapi.PodSandboxMetadata{Name: sb.pod.name, Namespace: sb.pod.namespace, Uid: string(sb.uid), Attempt: sb.attempt}
}

func (sb *sandbox) labels() map[string]string {
	return map[string]string{
		pleg.PodUIDLabel:  string(sb.uid),
		podNameLabel:      sb.pod.name,
		podNamespaceLabel: sb.pod.namespace,
	}
}

func (sb *sandbox) status() *runtimeapi.PodSandboxStatus {
	return &runtimeapi.PodSandboxStatus{
		Id:        sb.id,
		Metadata:  sb.metadata(),
		State:     sb.state,
		CreatedAt: sb.createdAt,
		Network:   &runtimeapi.PodSandboxNetworkStatus{Ip: sb.ip},
		Labels:    sb.labels(),
	}
}

func (c *container) metadata() *runtimeapi.ContainerMetadata {
	return &runtimeapi.ContainerMetadata{Name: c.name, Attempt: c.attempt}
}

func (c *container) labels() map[string]string {
	return map[string]string{
		pleg.PodUIDLabel:   string(c.uid),
		podNameLabel:       c.pod.name,
		podNamespaceLabel:  c.pod.namespace,
		containerNameLabel: c.name,
	}
}

func (c *container) status() *runtimeapi.ContainerStatus {
	return &runtimeapi.ContainerStatus{
		Id:         c.id,
		Metadata:   c.metadata(),
		State:      c.state,
		CreatedAt:  c.createdAt,
		StartedAt:  c.startedAt,
		FinishedAt: c.finished,
		ExitCode:   c.exitCode,
		Image:      &runtimeapi.ImageSpec{Image: Image},
		ImageRef:   Image,
		Reason:     c.reason,
		Labels:     c.labels(),
	}
}
