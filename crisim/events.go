package crisim

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// subscriber is one GetContainerEvents stream. The runtime never blocks on
// it: events go to a bounded buffer and, when that is full, the subscriber
// is dropped by closing dropped.
type subscriber struct {
	events  chan *runtimeapi.ContainerEventResponse
	dropped chan struct{}
}

func (s *Sim) subscribe() *subscriber {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := &subscriber{
		events:  make(chan *runtimeapi.ContainerEventResponse, s.cfg.EventBuffer),
		dropped: make(chan struct{}),
	}
	s.subs[sub] = struct{}{}
	return sub
}

func (s *Sim) unsubscribe(sub *subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.subs, sub)
}

// subscribers reports how many event streams are connected.
func (s *Sim) subscribers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs)
}

// publishLocked hands ev to every subscriber without blocking. Subscribers
// share ev: protobuf messages are safe to marshal concurrently as long as
// nobody mutates them, and events are never mutated after publication.
func (s *Sim) publishLocked(ev *runtimeapi.ContainerEventResponse) {
	for sub := range s.subs {
		select {
		case sub.events <- ev:
		default:
			delete(s.subs, sub)
			close(sub.dropped)
		}
	}
}

// publishSandboxLocked emits an event about a sandbox, using its ID as the
// container ID like containerd does.
func (s *Sim) publishSandboxLocked(sb *sandbox, typ runtimeapi.ContainerEventType) {
	if len(s.subs) == 0 {
		return
	}
	s.publishLocked(&runtimeapi.ContainerEventResponse{
		ContainerId:        sb.id,
		ContainerEventType: typ,
		CreatedAt:          s.nowNano(),
		PodSandboxStatus:   sb.status(),
		ContainersStatuses: s.containerStatusesLocked(sb.id),
	})
}

// publishContainerLocked emits an event about a container, carrying its
// sandbox status and the statuses of the sandbox's containers.
func (s *Sim) publishContainerLocked(c *container, typ runtimeapi.ContainerEventType) {
	if len(s.subs) == 0 {
		return
	}
	ev := &runtimeapi.ContainerEventResponse{
		ContainerId:        c.id,
		ContainerEventType: typ,
		CreatedAt:          s.nowNano(),
		ContainersStatuses: s.containerStatusesLocked(c.sandboxID),
	}
	if sb, ok := s.sandboxes[c.sandboxID]; ok {
		ev.PodSandboxStatus = sb.status()
	}
	s.publishLocked(ev)
}

// GetContainerEvents streams container and sandbox lifecycle events until
// the client goes away, the server stops, or the subscriber falls more than
// Config.EventBuffer events behind, in which case the stream fails with
// ResourceExhausted and the client must reconnect. Response headers are sent
// once the subscription is registered.
func (r *runtimeService) GetContainerEvents(_ *runtimeapi.GetEventsRequest, stream grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	sub := r.sim.subscribe()
	defer r.sim.unsubscribe(sub)
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	ctx := stream.Context()
	for {
		select {
		case ev := <-sub.events:
			if err := stream.Send(ev); err != nil {
				return err
			}
		case <-sub.dropped:
			return status.Errorf(codes.ResourceExhausted,
				"crisim: event subscriber fell more than %d events behind and was dropped; reconnect", r.sim.cfg.EventBuffer)
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}
