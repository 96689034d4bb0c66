package crisim

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sandbox is the simulated state of one pod sandbox.
type sandbox struct {
	id          string
	seq         uint64
	meta        *runtimeapi.PodSandboxMetadata
	labels      map[string]string
	annotations map[string]string
	logDir      string
	handler     string
	state       runtimeapi.PodSandboxState
	createdAt   int64
	ip          string
	usage       ContainerUsage
}

func (sb *sandbox) metadata() *runtimeapi.PodSandboxMetadata {
	return proto.CloneOf(sb.meta)
}

func (sb *sandbox) status() *runtimeapi.PodSandboxStatus {
	return &runtimeapi.PodSandboxStatus{
		Id:             sb.id,
		Metadata:       sb.metadata(),
		State:          sb.state,
		CreatedAt:      sb.createdAt,
		Network:        &runtimeapi.PodSandboxNetworkStatus{Ip: sb.ip},
		Labels:         maps.Clone(sb.labels),
		Annotations:    maps.Clone(sb.annotations),
		RuntimeHandler: sb.handler,
	}
}

func (sb *sandbox) item() *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{
		Id:             sb.id,
		Metadata:       sb.metadata(),
		State:          sb.state,
		CreatedAt:      sb.createdAt,
		Labels:         maps.Clone(sb.labels),
		Annotations:    maps.Clone(sb.annotations),
		RuntimeHandler: sb.handler,
	}
}

func (sb *sandbox) matches(f *runtimeapi.PodSandboxFilter) bool {
	if f == nil {
		return true
	}
	if f.Id != "" && f.Id != sb.id {
		return false
	}
	if f.State != nil && f.State.State != sb.state {
		return false
	}
	return matchLabels(sb.labels, f.LabelSelector)
}

// sandboxesLocked returns the sandboxes accepted by keep, oldest first.
func (s *Sim) sandboxesLocked(keep func(*sandbox) bool) []*sandbox {
	var out []*sandbox
	for _, sb := range s.sandboxes {
		if keep(sb) {
			out = append(out, sb)
		}
	}
	slices.SortFunc(out, func(a, b *sandbox) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

func (s *Sim) listSandboxes(f *runtimeapi.PodSandboxFilter) []*runtimeapi.PodSandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*runtimeapi.PodSandbox
	for _, sb := range s.sandboxesLocked(func(sb *sandbox) bool { return sb.matches(f) }) {
		out = append(out, sb.item())
	}
	return out
}

func sameSandbox(a, b *runtimeapi.PodSandboxMetadata) bool {
	return a.GetName() == b.GetName() && a.GetNamespace() == b.GetNamespace() &&
		a.GetUid() == b.GetUid() && a.GetAttempt() == b.GetAttempt()
}

// RunPodSandbox creates a READY sandbox and emits its CREATED and STARTED
// events. A second sandbox with the same name, namespace, UID and attempt is
// rejected with AlreadyExists, as real runtimes reserve that name.
func (r *runtimeService) RunPodSandbox(_ context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	cfg := req.GetConfig()
	md := cfg.GetMetadata()
	if md.GetName() == "" || md.GetNamespace() == "" || md.GetUid() == "" {
		return nil, invalid("sandbox config must set metadata name, namespace and uid")
	}
	s := r.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, other := range s.sandboxes {
		if sameSandbox(other.meta, md) {
			return nil, status.Errorf(codes.AlreadyExists, "pod sandbox %s/%s (uid %s, attempt %d) already exists as %q",
				md.Namespace, md.Name, md.Uid, md.Attempt, other.id)
		}
	}
	id, seq := s.newIDLocked("sandbox")
	sb := &sandbox{
		id:          id,
		seq:         seq,
		meta:        proto.CloneOf(md),
		labels:      maps.Clone(cfg.Labels),
		annotations: maps.Clone(cfg.Annotations),
		logDir:      cfg.LogDirectory,
		handler:     req.RuntimeHandler,
		state:       runtimeapi.PodSandboxState_SANDBOX_READY,
		createdAt:   s.nowNano(),
		ip:          fmt.Sprintf("10.88.%d.%d", seq/254%256, seq%254+1),
	}
	s.sandboxes[id] = sb
	s.publishSandboxLocked(sb, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	s.publishSandboxLocked(sb, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}

// StopPodSandbox kills the running containers of the sandbox (exit code 137)
// and makes it NOTREADY. Stopping a stopped sandbox is a no-op.
func (r *runtimeService) StopPodSandbox(_ context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	s := r.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[req.PodSandboxId]
	if !ok {
		return nil, notFound("pod sandbox", req.PodSandboxId)
	}
	s.stopSandboxLocked(sb)
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (s *Sim) stopSandboxLocked(sb *sandbox) {
	now := s.nowNano()
	for _, c := range s.containersOfLocked(sb.id) {
		s.exitLocked(c, now, exitCodeKilled, reasonError, "")
	}
	if sb.state == runtimeapi.PodSandboxState_SANDBOX_READY {
		sb.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		s.publishSandboxLocked(sb, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	}
}

// RemovePodSandbox force-removes the containers of the sandbox, stops it if
// needed and deletes it. Removing an unknown sandbox succeeds.
func (r *runtimeService) RemovePodSandbox(_ context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	s := r.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[req.PodSandboxId]
	if !ok {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	for _, c := range s.containersOfLocked(sb.id) {
		s.removeContainerLocked(c)
	}
	s.stopSandboxLocked(sb)
	delete(s.sandboxes, sb.id)
	s.publishSandboxLocked(sb, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// PodSandboxStatus returns the sandbox status and the statuses of its
// containers.
func (r *runtimeService) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	s := r.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[req.PodSandboxId]
	if !ok {
		return nil, notFound("pod sandbox", req.PodSandboxId)
	}
	return &runtimeapi.PodSandboxStatusResponse{
		Status:             sb.status(),
		ContainersStatuses: s.containerStatusesLocked(sb.id),
		Timestamp:          s.nowNano(),
	}, nil
}

// ListPodSandbox lists the sandboxes matching the filter, oldest first.
func (r *runtimeService) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	return &runtimeapi.ListPodSandboxResponse{Items: r.sim.listSandboxes(req.Filter)}, nil
}

// StreamPodSandboxes streams what ListPodSandbox returns, in chunks.
func (r *runtimeService) StreamPodSandboxes(req *runtimeapi.StreamPodSandboxesRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxesResponse]) error {
	return sendChunks(r.sim.cfg.StreamChunkSize, r.sim.listSandboxes(req.Filter), func(items []*runtimeapi.PodSandbox) error {
		return stream.Send(&runtimeapi.StreamPodSandboxesResponse{PodSandboxes: items})
	})
}

// UpdatePodSandboxResources accepts the update for an existing sandbox; the
// simulation has no cgroups to change.
func (r *runtimeService) UpdatePodSandboxResources(_ context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	s := r.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sandboxes[req.PodSandboxId]; !ok {
		return nil, notFound("pod sandbox", req.PodSandboxId)
	}
	return &runtimeapi.UpdatePodSandboxResourcesResponse{}, nil
}

// sendChunks calls send with consecutive slices of at most size items; it
// sends nothing for an empty list, as the streaming list RPCs require.
func sendChunks[T any](size int, items []T, send func([]T) error) error {
	for chunk := range slices.Chunk(items, size) {
		if err := send(chunk); err != nil {
			return err
		}
	}
	return nil
}
