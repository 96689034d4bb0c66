package crisim

import (
	"context"
	"maps"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CreateContainer creates a CREATED container in a READY sandbox. The image
// must be present; the log path is the sandbox log directory joined with the
// container log path, as real runtimes do.
func (r *runtimeService) CreateContainer(_ context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	cfg := req.GetConfig()
	md := cfg.GetMetadata()
	if md.GetName() == "" {
		return nil, invalid("container config must set metadata name")
	}
	if cfg.GetImage().GetImage() == "" {
		return nil, invalid("container config must set an image")
	}
	s := r.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[req.PodSandboxId]
	if !ok {
		return nil, notFound("pod sandbox", req.PodSandboxId)
	}
	if sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, precondition("pod sandbox %q is not ready", sb.id)
	}
	for _, other := range s.containersOfLocked(sb.id) {
		if other.meta.Name == md.Name && other.meta.Attempt == md.Attempt {
			return nil, status.Errorf(codes.AlreadyExists, "container %q (attempt %d) already exists in pod sandbox %q as %q",
				md.Name, md.Attempt, sb.id, other.id)
		}
	}
	img := s.findImageLocked(cfg.Image.Image)
	if img == nil {
		return nil, notFound("image", cfg.Image.Image)
	}
	logPath := cfg.LogPath
	if logPath != "" && sb.logDir != "" {
		logPath = filepath.Join(sb.logDir, logPath)
	}
	var resources *runtimeapi.ContainerResources
	if lr := cfg.GetLinux().GetResources(); lr != nil {
		resources = &runtimeapi.ContainerResources{Linux: proto.CloneOf(lr)}
	}
	mounts := make([]*runtimeapi.Mount, 0, len(cfg.Mounts))
	for _, m := range cfg.Mounts {
		mounts = append(mounts, proto.CloneOf(m))
	}
	id, seq := s.newIDLocked("container")
	c := &container{
		id:          id,
		seq:         seq,
		sandboxID:   sb.id,
		target:      Match{Pod: sb.meta.Name, Namespace: sb.meta.Namespace, Container: md.Name},
		meta:        proto.CloneOf(md),
		image:       proto.CloneOf(cfg.Image),
		imageRef:    img.ref(),
		imageID:     img.id,
		labels:      maps.Clone(cfg.Labels),
		annotations: maps.Clone(cfg.Annotations),
		mounts:      mounts,
		logPath:     logPath,
		resources:   resources,
		stopSignal:  cfg.StopSignal,
		user:        processUser(cfg.GetLinux().GetSecurityContext()),
		state:       runtimeapi.ContainerState_CONTAINER_CREATED,
		createdAt:   s.nowNano(),
		exited:      make(chan struct{}),
	}
	s.containers[id] = c
	s.publishContainerLocked(c, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}

// processUser is the identity of a container's process as containerd
// reports it: the security context's user and group (root without them),
// the group first among the supplementary groups, then the context's
// (images carry no /etc/group here, so no group comes from the image).
func processUser(sc *runtimeapi.LinuxContainerSecurityContext) *runtimeapi.ContainerUser {
	u := &runtimeapi.LinuxContainerUser{Uid: sc.GetRunAsUser().GetValue(), Gid: sc.GetRunAsGroup().GetValue()}
	u.SupplementalGroups = []int64{u.Gid}
	for _, g := range sc.GetSupplementalGroups() {
		if g != u.Gid {
			u.SupplementalGroups = append(u.SupplementalGroups, g)
		}
	}
	return &runtimeapi.ContainerUser{Linux: u}
}

// StartContainer runs a CREATED container according to its Script. When the
// script has a StartError the container ends EXITED with exit code 128 and
// reason "StartError", and the error is returned.
func (r *runtimeService) StartContainer(_ context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	s := r.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[req.ContainerId]
	if !ok {
		return nil, notFound("container", req.ContainerId)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		return nil, precondition("container %q is in state %s, not created", c.id, c.state)
	}
	if sb := s.sandboxes[c.sandboxID]; sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, precondition("pod sandbox %q of container %q is not ready", sb.id, c.id)
	}
	if err := s.startLocked(c); err != nil {
		return nil, err
	}
	return &runtimeapi.StartContainerResponse{}, nil
}

// StopContainer stops a running container and returns once it has exited:
// after the script's StopDelay if shorter than the timeout, else killed with
// exit code 137 when the timeout expires (both on the injected clock).
// Stopping a container that does not run is a no-op.
func (r *runtimeService) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	s := r.sim
	s.mu.Lock()
	c, ok := s.containers[req.ContainerId]
	if !ok {
		s.mu.Unlock()
		return nil, notFound("container", req.ContainerId)
	}
	if !c.running() {
		s.mu.Unlock()
		return &runtimeapi.StopContainerResponse{}, nil
	}
	s.terminateLocked(c, time.Duration(req.Timeout)*time.Second)
	exited := c.exited
	s.mu.Unlock()

	select {
	case <-exited:
		return &runtimeapi.StopContainerResponse{}, nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// RemoveContainer deletes a container, force-stopping it if it runs.
// Removing an unknown container succeeds.
func (r *runtimeService) RemoveContainer(_ context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	s := r.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.containers[req.ContainerId]; ok {
		s.removeContainerLocked(c)
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}

// ContainerStatus returns the status of a container.
func (r *runtimeService) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	s := r.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[req.ContainerId]
	if !ok {
		return nil, notFound("container", req.ContainerId)
	}
	return &runtimeapi.ContainerStatusResponse{Status: c.status()}, nil
}

// ListContainers lists the containers matching the filter, oldest first.
func (r *runtimeService) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	return &runtimeapi.ListContainersResponse{Containers: r.sim.listContainers(req.Filter)}, nil
}

// StreamContainers streams what ListContainers returns, in chunks.
func (r *runtimeService) StreamContainers(req *runtimeapi.StreamContainersRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamContainersResponse]) error {
	return sendChunks(r.sim.cfg.StreamChunkSize, r.sim.listContainers(req.Filter), func(items []*runtimeapi.Container) error {
		return stream.Send(&runtimeapi.StreamContainersResponse{Containers: items})
	})
}

// UpdateContainerResources records the new resources, which ContainerStatus
// then reports. Exited containers cannot be updated.
func (r *runtimeService) UpdateContainerResources(_ context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	s := r.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[req.ContainerId]
	if !ok {
		return nil, notFound("container", req.ContainerId)
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_EXITED {
		return nil, precondition("container %q has exited", c.id)
	}
	c.resources = &runtimeapi.ContainerResources{
		Linux:   proto.CloneOf(req.Linux),
		Windows: proto.CloneOf(req.Windows),
	}
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// ReopenContainerLog succeeds for running containers and fails otherwise,
// as containerd does.
func (r *runtimeService) ReopenContainerLog(_ context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	s := r.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.containers[req.ContainerId]
	if !ok {
		return nil, notFound("container", req.ContainerId)
	}
	if !c.running() {
		return nil, precondition("container %q is not running", c.id)
	}
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}
