package crisim

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestImages(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	spec := func(ref string) *runtimeapi.ImageSpec { return &runtimeapi.ImageSpec{Image: ref} }

	imgs, err := e.img.ListImages(ctx, nil)
	require.NoError(t, err)
	require.Len(t, imgs, 2)
	require.Equal(t, []string{pauseImage}, imgs[0].RepoTags)
	require.Equal(t, uint64(700_000), imgs[0].Size)
	require.True(t, imgs[0].Pinned)
	require.Equal(t, uint64(5_000_000), imgs[1].Size)

	st, err := e.img.ImageStatus(ctx, spec(pauseImage), false)
	require.NoError(t, err)
	require.Equal(t, imgs[0].Id, st.Image.Id)
	st, err = e.img.ImageStatus(ctx, spec("example.com/missing:v1"), false)
	require.NoError(t, err)
	require.Nil(t, st.Image, "a missing image has a nil status")

	const pulled = "example.com/new:v2"
	ref, err := e.img.PullImage(ctx, spec(pulled), nil, nil)
	require.NoError(t, err)
	require.Contains(t, ref, "sha256:")
	again, err := e.img.PullImage(ctx, spec(pulled), nil, nil)
	require.NoError(t, err)
	require.Equal(t, ref, again, "pulling twice yields the same image")
	st, err = e.img.ImageStatus(ctx, spec(ref), false)
	require.NoError(t, err, "images are found by ID too")
	require.Equal(t, uint64(DefaultImageSize), st.Image.Size)
	require.Equal(t, []string{pulled}, st.Image.RepoTags)
	require.Len(t, st.Image.RepoDigests, 1)

	filtered, err := e.img.ListImages(ctx, &runtimeapi.ImageFilter{Image: spec(pulled)})
	require.NoError(t, err)
	require.Len(t, filtered, 1)
	require.Equal(t, ref, filtered[0].Id)

	require.NoError(t, e.img.RemoveImage(ctx, spec(pulled)))
	imgs, err = e.img.ListImages(ctx, nil)
	require.NoError(t, err)
	require.Len(t, imgs, 2)

	e.sim.Inject("PullImage", Fault{Err: status.Error(codes.NotFound, "manifest unknown"), Times: 1})
	_, err = e.img.PullImage(ctx, spec(pulled), nil, nil)
	requireCode(t, codes.NotFound, err)
	_, err = e.img.PullImage(ctx, spec(pulled), nil, nil)
	require.NoError(t, err)

	id := e.sim.AddImage(Image{Ref: "example.com/big:v1", Size: 1 << 30})
	st, err = e.img.ImageStatus(ctx, spec("example.com/big:v1"), false)
	require.NoError(t, err)
	require.Equal(t, id, st.Image.Id)
	require.Equal(t, uint64(1<<30), st.Image.Size)
}

func TestContainerUsesPulledImage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	podID := e.runPod(t, "web")
	cfg := containerConfig("app")
	cfg.Image = &runtimeapi.ImageSpec{Image: "example.com/late:v1"}

	_, err := e.rt.CreateContainer(ctx, podID, cfg, nil)
	requireCode(t, codes.NotFound, err)
	ref, err := e.img.PullImage(ctx, cfg.Image, nil, nil)
	require.NoError(t, err)
	id, err := e.rt.CreateContainer(ctx, podID, cfg, nil)
	require.NoError(t, err)
	st := e.containerStatus(t, id)
	require.Equal(t, ref, st.ImageId)
	require.Equal(t, "example.com/late:v1", st.Image.Image)
}
