// Package statstest provides a fake of the CRI interface stats.Provider
// reads (stats.PodStatsLister), for tests and benchmarks of hosts that use
// it. It does not import stats, so that stats' own tests can use it; the
// compile-time assertion lives in stats' external tests.
package statstest

import (
	"context"
	"sync"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Method names for SetError and BeforeCall.
const (
	ListPodSandbox      = "ListPodSandbox"
	ListContainers      = "ListContainers"
	ListPodSandboxStats = "ListPodSandboxStats"
	ListContainerStats  = "ListContainerStats"
)

// State is what the fake runtime reports. The fake returns copies, so a
// test may keep changing its State through Update.
type State struct {
	// Sandboxes is what ListPodSandbox returns.
	Sandboxes []*runtimeapi.PodSandbox
	// Containers is what ListContainers returns.
	Containers []*runtimeapi.Container
	// SandboxStats is what ListPodSandboxStats returns.
	SandboxStats []*runtimeapi.PodSandboxStats
	// ContainerStats is what ListContainerStats returns.
	ContainerStats []*runtimeapi.ContainerStats
}

// Runtime is a fake stats.PodStatsLister serving a State. The zero value
// reports nothing. Safe for concurrent use.
type Runtime struct {
	// BeforeCall, if set, runs at the start of every method with the
	// method's name, outside the fake's lock: a test may call Update from
	// it to change the runtime between two calls of one Get (a container
	// that exits after being listed). Set it before the first call.
	BeforeCall func(method string)
	// NoCopy returns the State's own objects instead of copies: cheaper
	// for benchmarks that never change the State.
	NoCopy bool

	mu    sync.Mutex
	state State
	errs  map[string]error
	calls map[string]int
}

// Update changes the State under the fake's lock.
func (r *Runtime) Update(f func(*State)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.state)
}

// SetError makes method fail with err (nil: succeed again).
func (r *Runtime) SetError(method string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.errs == nil {
		r.errs = map[string]error{}
	}
	r.errs[method] = err
}

// Calls is how many times method was called.
func (r *Runtime) Calls(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[method]
}

func (r *Runtime) enter(method string) error {
	if r.BeforeCall != nil {
		r.BeforeCall(method)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string]int{}
	}
	r.calls[method]++
	return r.errs[method]
}

func cloneAll[T proto.Message](noCopy bool, in []T) []T {
	if noCopy {
		return append([]T(nil), in...)
	}
	out := make([]T, len(in))
	for i, m := range in {
		out[i] = proto.Clone(m).(T)
	}
	return out
}

// ListPodSandbox returns every sandbox; the filter is ignored.
func (r *Runtime) ListPodSandbox(_ context.Context, _ *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	if err := r.enter(ListPodSandbox); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return cloneAll(r.NoCopy, r.state.Sandboxes), nil
}

// ListContainers returns every container; the filter is ignored.
func (r *Runtime) ListContainers(_ context.Context, _ *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	if err := r.enter(ListContainers); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return cloneAll(r.NoCopy, r.state.Containers), nil
}

// ListPodSandboxStats returns every sandbox's stats; the filter is ignored.
func (r *Runtime) ListPodSandboxStats(_ context.Context, _ *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	if err := r.enter(ListPodSandboxStats); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return cloneAll(r.NoCopy, r.state.SandboxStats), nil
}

// ListContainerStats returns every container's stats; the filter is
// ignored.
func (r *Runtime) ListContainerStats(_ context.Context, _ *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	if err := r.enter(ListContainerStats); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return cloneAll(r.NoCopy, r.state.ContainerStats), nil
}
