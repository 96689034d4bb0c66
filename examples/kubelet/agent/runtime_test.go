package agent

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// listingRuntime answers inspect's four calls from fixed lists.
type listingRuntime struct {
	criapi.RuntimeService
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
}

func (r *listingRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return r.sandboxes, nil
}
func (r *listingRuntime) PodSandboxStatus(context.Context, string, bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	return &runtimeapi.PodSandboxStatusResponse{}, nil
}
func (r *listingRuntime) ListContainers(_ context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	var out []*runtimeapi.Container
	for _, c := range r.containers {
		if f.GetPodSandboxId() == "" || f.GetPodSandboxId() == c.PodSandboxId {
			out = append(out, c)
		}
	}
	return out, nil
}
func (r *listingRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	for _, c := range r.containers {
		if c.Id == id {
			return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id, Metadata: c.Metadata,
				State: c.State, CreatedAt: c.CreatedAt}}, nil
		}
	}
	return nil, assert.AnError
}

func TestInspectAcrossSandboxes(t *testing.T) {
	exited := runtimeapi.ContainerState_CONTAINER_EXITED
	rt := &listingRuntime{
		sandboxes: []*runtimeapi.PodSandbox{{Id: "old", CreatedAt: 1}, {Id: "new", CreatedAt: 2, State: runtimeapi.PodSandboxState_SANDBOX_READY}},
		containers: []*runtimeapi.Container{
			{Id: "a3", PodSandboxId: "old", State: exited, CreatedAt: 3, Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: 3}},
			{Id: "i0", PodSandboxId: "old", State: exited, CreatedAt: 1, Metadata: &runtimeapi.ContainerMetadata{Name: "init", Attempt: 0}},
			{Id: "i1", PodSandboxId: "new", State: exited, CreatedAt: 5, Metadata: &runtimeapi.ContainerMetadata{Name: "init", Attempt: 1}},
		},
	}
	p, err := inspect(context.Background(), rt, "u1")
	require.NoError(t, err)
	assert.Equal(t, "new", p.sandboxes[0].Id, "newest sandbox first")
	require.Len(t, p.containers, 1, "the plan sees the newest sandbox only")
	assert.Equal(t, "i1", p.containers[0].Id)
	assert.Nil(t, p.latest("app"), "app has not run in the new sandbox")
	assert.Equal(t, uint32(4), p.nextAttempt("app"), "restart counts continue across sandboxes")
	assert.Equal(t, uint32(2), p.nextAttempt("init"))
	assert.Equal(t, uint32(0), p.nextAttempt("never"))
	assert.Equal(t, "a3", p.previous("app").Id, "last state from the old sandbox")
	assert.Equal(t, "i0", p.previous("init").Id)

	one, err := inspect(context.Background(), &listingRuntime{sandboxes: rt.sandboxes[1:], containers: rt.containers[2:]}, "u1")
	require.NoError(t, err)
	assert.Empty(t, one.older)
	assert.Nil(t, one.previous("init"))
}
