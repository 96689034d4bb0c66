package plegtest

import (
	"context"
	"io"

	"google.golang.org/grpc/metadata"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// subscriber is one GetContainerEvents stream. Publishing never blocks:
// events queue here (unbounded) until the stream hands them on.
type subscriber struct {
	queue  []*runtimeapi.ContainerEventResponse
	wake   chan struct{} // capacity 1: the queue grew
	broke  chan struct{} // closed by BreakStreams
	open   bool          // established has returned
	broken bool
	err    error // returned when broken
}

// GetContainerEvents implements pleg.RuntimeService. It registers the
// stream, calls established (if not nil) with a stream whose Header answers
// empty, non-nil metadata — what pleg reads to tell the runtime registered
// the subscription —, then sends every event published since registration
// to ch, in order, until ctx ends (it returns the gRPC status error of
// ctx) or BreakStreams breaks it (it returns BreakStreams' error). It never
// blocks a driver method: events wait in an unbounded queue for ch.
func (r *Runtime) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	if err := r.begin(ctx, methodGetContainerEvents); err != nil {
		return err
	}
	sub := &subscriber{wake: make(chan struct{}, 1), broke: make(chan struct{})}
	r.mu.Lock()
	r.subs[sub] = struct{}{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.subs, sub)
		r.mu.Unlock()
	}()
	if established != nil {
		established(&eventStream{ctx: ctx})
	}
	r.mu.Lock()
	sub.open = true
	r.mu.Unlock()
	for {
		r.mu.Lock()
		if sub.broken {
			r.mu.Unlock()
			return sub.err
		}
		var ev *runtimeapi.ContainerEventResponse
		if len(sub.queue) > 0 {
			ev = sub.queue[0]
			sub.queue[0] = nil
			sub.queue = sub.queue[1:]
		}
		r.mu.Unlock()
		if ev == nil {
			select {
			case <-sub.wake:
			case <-sub.broke:
			case <-ctx.Done():
				return ctxErr(ctx)
			}
			continue
		}
		select {
		case ch <- ev:
		case <-sub.broke:
		case <-ctx.Done():
			return ctxErr(ctx)
		}
	}
}

// Streams returns how many GetContainerEvents streams are open: registered
// and past their established callback. Once it counts a stream, every later
// change reaches that stream.
func (r *Runtime) Streams() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for sub := range r.subs {
		if sub.open && !sub.broken {
			n++
		}
	}
	return n
}

// BreakStreams breaks every open event stream, as a runtime restart would:
// their GetContainerEvents calls return err (nil: io.EOF, what cri-client
// returns when the runtime closes the stream), and the events they had not
// handed on yet are lost. It returns how many streams it broke.
func (r *Runtime) BreakStreams(err error) int {
	if err == nil {
		err = io.EOF
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for sub := range r.subs {
		if sub.broken {
			continue
		}
		sub.broken, sub.err, sub.queue = true, err, nil
		close(sub.broke)
		n++
	}
	return n
}

// publishLocked queues an event for every stream. Streams share ev, which
// nobody modifies after publication.
func (r *Runtime) publishLocked(id string, typ runtimeapi.ContainerEventType, sb *runtimeapi.PodSandboxStatus, cs []*runtimeapi.ContainerStatus) {
	if len(r.subs) == 0 {
		return
	}
	ev := &runtimeapi.ContainerEventResponse{
		ContainerId:        id,
		ContainerEventType: typ,
		CreatedAt:          max(r.clock.Now().UnixNano(), r.last), // the change's stamp
		PodSandboxStatus:   sb,
		ContainersStatuses: cs,
	}
	for sub := range r.subs {
		if sub.broken {
			continue
		}
		sub.queue = append(sub.queue, ev)
		select {
		case sub.wake <- struct{}{}:
		default:
		}
	}
}

// publishSandboxLocked publishes an event about sb, with sb's ID as the
// container ID, as containerd does.
func (r *Runtime) publishSandboxLocked(sb *sandbox, typ runtimeapi.ContainerEventType) {
	if len(r.subs) == 0 {
		return
	}
	r.publishLocked(sb.id, typ, sb.status(), r.statusesLocked(sb.id))
}

// publishContainerLocked publishes an event about c, with its sandbox's
// status (none if it has no sandbox) and the statuses of the sandbox's
// containers (c alone without a sandbox; without c once it is removed).
func (r *Runtime) publishContainerLocked(c *container, typ runtimeapi.ContainerEventType) {
	if len(r.subs) == 0 {
		return
	}
	sb := r.sandboxLocked(c.sandboxID)
	if sb == nil {
		var cs []*runtimeapi.ContainerStatus
		if typ != runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT {
			cs = []*runtimeapi.ContainerStatus{c.status()}
		}
		r.publishLocked(c.id, typ, nil, cs)
		return
	}
	r.publishLocked(c.id, typ, sb.status(), r.statusesLocked(sb.id))
}

// statusesLocked returns the statuses of the containers of a sandbox.
func (r *Runtime) statusesLocked(sandboxID string) []*runtimeapi.ContainerStatus {
	var out []*runtimeapi.ContainerStatus
	for _, c := range r.containers {
		if c.sandboxID == sandboxID {
			out = append(out, c.status())
		}
	}
	return out
}

// eventStream is the stream handed to established: just enough of a gRPC
// client stream for a caller that checks the response headers. Events are
// delivered on GetContainerEvents' channel, not by Recv.
type eventStream struct {
	ctx context.Context
}

// Header returns empty, non-nil metadata: the subscription is registered.
func (s *eventStream) Header() (metadata.MD, error) { return metadata.MD{}, nil }

// Trailer returns nil: the stream has no trailer until it ends.
func (s *eventStream) Trailer() metadata.MD { return nil }

// CloseSend does nothing.
func (s *eventStream) CloseSend() error { return nil }

// Context returns the context of the GetContainerEvents call.
func (s *eventStream) Context() context.Context { return s.ctx }

// SendMsg fails: the client sends nothing on an event stream.
func (s *eventStream) SendMsg(any) error { return errNotSupported }

// RecvMsg fails: events arrive on GetContainerEvents' channel.
func (s *eventStream) RecvMsg(any) error { return errNotSupported }

// Recv fails: events arrive on GetContainerEvents' channel.
func (s *eventStream) Recv() (*runtimeapi.ContainerEventResponse, error) {
	return nil, errNotSupported
}
