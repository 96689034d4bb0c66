package crinode_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	criapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/nodestatus"
	"github.com/nodekit/nodekit/nodestatus/crinode"
)

// fakeRuntime answers Status and Version; the other methods are not used.
type fakeRuntime struct {
	criapi.RuntimeService
	status *runtimeapi.StatusResponse
	err    error
	calls  int
}

func (f *fakeRuntime) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	f.calls++
	return f.status, f.err
}

func (f *fakeRuntime) Version(context.Context, string) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "containerd", RuntimeVersion: "2.2.9"}, f.err
}

type fakeImages struct{ criapi.ImageManagerService }

func (fakeImages) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	return []*runtimeapi.Image{{RepoTags: []string{"busybox:1"}, RepoDigests: []string{"busybox@sha256:1"}, Size: 42}}, nil
}

func status(runtimeReady, networkReady bool) *runtimeapi.StatusResponse {
	return &runtimeapi.StatusResponse{
		Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: runtimeReady}, {Type: runtimeapi.NetworkReady, Status: networkReady}}},
		RuntimeHandlers: []*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true, UserNamespaces: true}},
			{Name: "runc", Features: &runtimeapi.RuntimeHandlerFeatures{}}},
		Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true},
	}
}

func TestSource(t *testing.T) {
	ctx := context.Background()
	rt := &fakeRuntime{status: status(true, true)}
	src, err := crinode.New(crinode.Config{Runtime: rt, Images: fakeImages{}, UserNamespaces: true})
	require.NoError(t, err)
	require.Nil(t, src.RuntimeHandlers(), "no Status answer yet")
	require.Nil(t, src.NodeFeatures())

	require.NoError(t, src.RuntimeErrors(ctx))
	require.NoError(t, src.NetworkErrors(ctx))
	require.Equal(t, []v1.NodeRuntimeHandler{
		{Name: "", Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: ptr.To(false), UserNamespaces: ptr.To(true)}},
		{Name: "runc", Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: ptr.To(false), UserNamespaces: ptr.To(false)}},
	}, src.RuntimeHandlers(), "a feature needs the runtime and the host")
	require.Equal(t, &v1.NodeFeatures{SupplementalGroupsPolicy: ptr.To(true)}, src.NodeFeatures())
	calls := rt.calls
	src.RuntimeHandlers()
	src.NodeFeatures()
	require.Equal(t, calls, rt.calls, "the handlers and features come from the last answer")

	require.False(t, src.RecursiveReadOnlyMounts(""), "the host does not offer it")
	rro, err := crinode.New(crinode.Config{Runtime: rt, RecursiveReadOnlyMounts: true})
	require.NoError(t, err)
	require.False(t, rro.RecursiveReadOnlyMounts(""), "no Status answer yet")
	require.NoError(t, rro.RuntimeErrors(ctx))
	require.True(t, rro.RecursiveReadOnlyMounts(""))
	require.False(t, rro.RecursiveReadOnlyMounts("runc"), "the runtime does not give it on this handler")
	require.False(t, rro.RecursiveReadOnlyMounts("kata"), "an unknown handler")
	require.False(t, rro.UserNamespaces(""), "not offered by this host")
	require.True(t, src.UserNamespaces(""))
	require.False(t, src.UserNamespaces("runc"))

	name, version, err := src.Version(ctx)
	require.NoError(t, err)
	require.Equal(t, "containerd 2.2.9", name+" "+version)
	imgs, err := src.Images(ctx)
	require.NoError(t, err)
	require.Equal(t, []nodestatus.Image{{RepoTags: []string{"busybox:1"}, RepoDigests: []string{"busybox@sha256:1"}, Size: 42}}, imgs)

	rt.status = status(false, false)
	require.EqualError(t, src.RuntimeErrors(ctx), "container runtime status check may not have completed yet")
	require.EqualError(t, src.NetworkErrors(ctx), "container runtime network not ready: NetworkReady=false")
	rt.err = errors.New("connection refused")
	require.EqualError(t, src.RuntimeErrors(ctx), "container runtime is down: connection refused")
	require.NoError(t, src.NetworkErrors(ctx), "a runtime down is the runtime's error")

	_, err = crinode.New(crinode.Config{})
	require.Error(t, err)
	none, err := crinode.New(crinode.Config{Runtime: rt})
	require.NoError(t, err)
	imgs, err = none.Images(ctx)
	require.NoError(t, err)
	require.Empty(t, imgs, "no image service")
}
