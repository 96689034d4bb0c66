package podsyncer

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit/nodekit/pleg"
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

func TestFromPLEGAcrossSandboxes(t *testing.T) {
	exited, running := runtimeapi.ContainerState_CONTAINER_EXITED, runtimeapi.ContainerState_CONTAINER_RUNNING
	ctr := func(id, name string, attempt uint32, created int64, state runtimeapi.ContainerState) *runtimeapi.ContainerStatus {
		return &runtimeapi.ContainerStatus{Id: id, State: state, CreatedAt: created, Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt}}
	}
	ps := &pleg.PodStatus{ID: "u1", IPs: []string{"10.0.0.9"},
		SandboxStatuses: []*runtimeapi.PodSandboxStatus{
			{Id: "old", CreatedAt: 1, State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY},
			{Id: "new", CreatedAt: 4, State: runtimeapi.PodSandboxState_SANDBOX_READY,
				Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.9"}}},
		ContainerStatuses: []*runtimeapi.ContainerStatus{
			ctr("i0", "init", 0, 2, exited), ctr("a3", "app", 3, 3, exited), ctr("i1", "init", 1, 5, exited), ctr("a4", "app", 4, 6, running)}}
	p := fromPLEG(ps)
	require.Len(t, p.sandboxes, 2)
	assert.Equal(t, "new", p.sandboxes[0].Id, "newest sandbox first")
	assert.Equal(t, []string{"10.0.0.9"}, p.sandboxIPs, "the PLEG's IPs")
	assert.NotNil(t, p.readySandbox())
	assert.Equal(t, []string{"a4", "i1"}, ids(p.containers), "created since the newest sandbox, newest first")
	assert.Equal(t, []string{"a3", "i0"}, ids(p.older))
	assert.Equal(t, uint32(5), p.nextAttempt("app"))
	assert.Equal(t, "a3", p.previous("app").Id)

	none := fromPLEG(&pleg.PodStatus{ID: "u2", ContainerStatuses: []*runtimeapi.ContainerStatus{ctr("x", "app", 2, 1, exited)}})
	assert.Empty(t, none.sandboxes)
	assert.Nil(t, none.readySandbox())
	assert.Empty(t, none.containers)
	assert.Equal(t, uint32(3), none.nextAttempt("app"), "restart counts continue without a sandbox")
}

func ids(cs []*runtimeapi.ContainerStatus) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Id)
	}
	return out
}

func TestAttemptsInLogDir(t *testing.T) {
	dir := t.TempDir()
	assert.Zero(t, attemptsInLogDir(filepath.Join(dir, "missing")))
	assert.Zero(t, attemptsInLogDir(dir), "empty")
	for _, name := range []string{"0.log", "2.log.20261202-101010", "7.logfoo", "x.log", "-1.log", "99999999999.log"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o600))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "9.log"), 0o700))
	assert.Equal(t, uint32(3), attemptsInLogDir(dir), "one past the highest attempt, rotated files counted, others ignored")
}
