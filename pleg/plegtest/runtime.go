package plegtest

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/pleg"
)

var _ pleg.RuntimeService = (*Runtime)(nil)

// Image is the image every container of the fake runs, as its ImageSpec and
// its ImageRef.
const Image = "registry.example/plegtest/app:1.0"

// KilledExitCode is the exit code of a container that StopPod, RemovePod or
// RemoveContainer stops while it runs (SIGKILL).
const KilledExitCode int32 = 137

var (
	// ErrNotFound is returned by the driver methods for an unknown
	// container ID or a pod UID the runtime has nothing of.
	ErrNotFound = errors.New("plegtest: not found")
	// ErrNotRunning is returned by ExitContainer for a container that has
	// already exited.
	ErrNotRunning = errors.New("plegtest: container not running")

	// errNotSupported is returned by the parts of the event stream handed
	// to established that pleg does not use.
	errNotSupported = errors.New("plegtest: not supported; events arrive on GetContainerEvents' channel")
)

// The kubelet's labels, besides pleg.PodUIDLabel.
const (
	podNameLabel       = "io.kubernetes.pod.name"
	podNamespaceLabel  = "io.kubernetes.pod.namespace"
	containerNameLabel = "io.kubernetes.container.name"
)

// Runtime is an in-memory pleg.RuntimeService. Create it with New; the zero
// value is not usable.
type Runtime struct {
	clock clock.PassiveClock

	mu         sync.Mutex
	last       int64 // last timestamp handed out, Unix nanoseconds
	sandboxes  []*sandbox
	containers []*container
	nextSB     int
	nextC      int
	pods       map[types.UID]podName
	attempts   map[attemptKey]uint32
	faults     map[string]fault
	calls      map[string]int
	subs       map[*subscriber]struct{}
}

type podName struct{ namespace, name string }

type attemptKey struct {
	uid  types.UID
	name string
}

type sandbox struct {
	id        string
	uid       types.UID
	pod       podName
	attempt   uint32
	state     runtimeapi.PodSandboxState
	createdAt int64
	ip        string
}

type container struct {
	id        string
	sandboxID string
	uid       types.UID
	pod       podName
	name      string
	attempt   uint32
	state     runtimeapi.ContainerState
	createdAt int64
	startedAt int64
	finished  int64
	exitCode  int32
	reason    string
}

// New returns an empty runtime whose timestamps come from clk. A nil clk
// means a fake clock fixed at 2026-01-01 00:00:00 UTC, never the real
// clock: tests stay deterministic, and creation order is kept by the
// strictly increasing timestamps.
func New(clk clock.PassiveClock) *Runtime {
	if clk == nil {
		clk = clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	}
	return &Runtime{
		clock:    clk,
		pods:     map[types.UID]podName{},
		attempts: map[attemptKey]uint32{},
		faults:   map[string]fault{},
		calls:    map[string]int{},
		subs:     map[*subscriber]struct{}{},
	}
}

// stamp returns the clock's time in Unix nanoseconds, later than every
// stamp before. mu must be held.
func (r *Runtime) stamp() int64 {
	now := r.clock.Now().UnixNano()
	if now <= r.last {
		now = r.last + 1
	}
	r.last = now
	return now
}

// RunPod creates a ready sandbox for the pod uid, named namespace/name, and
// returns its ID. A pod may have several sandboxes: each call creates a new
// one (its metadata's Attempt counts the pod's earlier sandboxes), which
// becomes the one StartContainer uses. The sandbox's IP follows from its
// number: sb-1 has 10.88.0.2, sb-2 10.88.0.3, and so on. It publishes the
// sandbox's created and started events.
func (r *Runtime) RunPod(uid types.UID, namespace, name string) (sandboxID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextSB++
	n := r.nextSB
	pod := podName{namespace: namespace, name: name}
	r.pods[uid] = pod
	key := attemptKey{uid: uid}
	sb := &sandbox{
		id:        "sb-" + strconv.Itoa(n),
		uid:       uid,
		pod:       pod,
		attempt:   r.attempts[key],
		state:     runtimeapi.PodSandboxState_SANDBOX_READY,
		createdAt: r.stamp(),
		ip:        fmt.Sprintf("10.88.%d.%d", (n+1)>>8, (n+1)&0xff),
	}
	r.attempts[key]++
	r.sandboxes = append(r.sandboxes, sb)
	r.publishSandboxLocked(sb, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	r.publishSandboxLocked(sb, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	return sb.id
}

// StartContainer creates the container name in the pod's newest sandbox,
// starts it, and returns its ID. Its metadata's Attempt counts the
// containers of that name the pod had before. If the pod has no sandbox,
// the container has none either (an empty PodSandboxId) and pleg groups it
// by its pleg.PodUIDLabel label. The fake does not check the sandbox is
// ready: the order of operations is the test's. It publishes the
// container's created and started events.
func (r *Runtime) StartContainer(uid types.UID, name string) (containerID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextC++
	key := attemptKey{uid: uid, name: name}
	c := &container{
		id:      "c-" + strconv.Itoa(r.nextC),
		uid:     uid,
		pod:     r.pods[uid],
		name:    name,
		attempt: r.attempts[key],
		state:   runtimeapi.ContainerState_CONTAINER_CREATED,
	}
	r.attempts[key]++
	if sb := r.newestSandboxLocked(uid); sb != nil {
		c.sandboxID = sb.id
	}
	c.createdAt = r.stamp()
	r.containers = append(r.containers, c)
	r.publishContainerLocked(c, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	c.state = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.startedAt = r.stamp()
	r.publishContainerLocked(c, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	return c.id
}

// ExitContainer makes the container id exit with code (reason "Completed"
// for 0, "Error" otherwise) and publishes its stopped event. It returns an
// error wrapping ErrNotFound for an unknown id and ErrNotRunning for a
// container that already exited.
func (r *Runtime) ExitContainer(id string, code int32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.containerLocked(id)
	if c == nil {
		return fmt.Errorf("%w: container %q", ErrNotFound, id)
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_EXITED {
		return fmt.Errorf("%w: container %q", ErrNotRunning, id)
	}
	r.exitLocked(c, code)
	return nil
}

// RemoveContainer removes the container id, killing it first (exit code
// KilledExitCode, stopped event) if it still runs, and publishes its
// deleted event. It returns an error wrapping ErrNotFound for an unknown id.
func (r *Runtime) RemoveContainer(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.containerLocked(id)
	if c == nil {
		return fmt.Errorf("%w: container %q", ErrNotFound, id)
	}
	r.removeContainerLocked(c)
	return nil
}

// StopPod kills the running containers of the pod uid (exit code
// KilledExitCode) and makes its ready sandboxes not ready, publishing a
// stopped event for each. Stopping a stopped pod does nothing. It returns
// an error wrapping ErrNotFound if the pod has no sandbox.
func (r *Runtime) StopPod(uid types.UID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	found := false
	for _, sb := range r.sandboxes {
		if sb.uid != uid {
			continue
		}
		found = true
		r.stopSandboxLocked(sb)
	}
	if !found {
		return fmt.Errorf("%w: no sandbox of pod %q", ErrNotFound, uid)
	}
	return nil
}

// RemovePod removes every container and sandbox of the pod uid, stopping
// them first as StopPod does, and publishes their deleted events
// (containers first). It returns an error wrapping ErrNotFound if the
// runtime has nothing of the pod.
func (r *Runtime) RemovePod(uid types.UID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	found := false
	for _, c := range append([]*container(nil), r.containers...) {
		if c.uid == uid {
			found = true
			r.removeContainerLocked(c)
		}
	}
	for _, sb := range append([]*sandbox(nil), r.sandboxes...) {
		if sb.uid != uid {
			continue
		}
		found = true
		r.stopSandboxLocked(sb)
		status := sb.status()
		r.sandboxes = deleteFrom(r.sandboxes, sb)
		r.publishLocked(sb.id, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, status, nil)
	}
	if !found {
		return fmt.Errorf("%w: nothing of pod %q", ErrNotFound, uid)
	}
	return nil
}

// stopSandboxLocked kills the sandbox's running containers and makes it
// not ready.
func (r *Runtime) stopSandboxLocked(sb *sandbox) {
	for _, c := range r.containers {
		if c.sandboxID == sb.id && c.state != runtimeapi.ContainerState_CONTAINER_EXITED {
			r.exitLocked(c, KilledExitCode)
		}
	}
	if sb.state == runtimeapi.PodSandboxState_SANDBOX_READY {
		sb.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		r.publishSandboxLocked(sb, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	}
}

func (r *Runtime) exitLocked(c *container, code int32) {
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.finished = r.stamp()
	c.exitCode = code
	c.reason = "Completed"
	if code != 0 {
		c.reason = "Error"
	}
	r.publishContainerLocked(c, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
}

func (r *Runtime) removeContainerLocked(c *container) {
	if c.state != runtimeapi.ContainerState_CONTAINER_EXITED {
		r.exitLocked(c, KilledExitCode)
	}
	r.containers = deleteFrom(r.containers, c)
	r.publishContainerLocked(c, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
}

func (r *Runtime) newestSandboxLocked(uid types.UID) *sandbox {
	for i := len(r.sandboxes) - 1; i >= 0; i-- {
		if r.sandboxes[i].uid == uid {
			return r.sandboxes[i]
		}
	}
	return nil
}

func (r *Runtime) sandboxLocked(id string) *sandbox {
	for _, sb := range r.sandboxes {
		if sb.id == id {
			return sb
		}
	}
	return nil
}

func (r *Runtime) containerLocked(id string) *container {
	for _, c := range r.containers {
		if c.id == id {
			return c
		}
	}
	return nil
}

// deleteFrom returns list without x, keeping the order.
func deleteFrom[T comparable](list []T, x T) []T {
	for i, v := range list {
		if v == x {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}
