package crisim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestStreamingLists(t *testing.T) {
	e := newEnv(t, streaming, withConfig(func(cfg *Config) { cfg.StreamChunkSize = 2 }))
	ctx := context.Background()

	var pods, ctrs []string
	for i := range 3 {
		pod := e.runPod(t, fmt.Sprintf("pod%d", i))
		pods = append(pods, pod)
		for j := range 2 {
			ctrs = append(ctrs, e.startContainer(t, pod, fmt.Sprintf("c%d", j)))
		}
	}

	sandboxes, err := e.rt.ListPodSandbox(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, pods, ids(sandboxes, (*runtimeapi.PodSandbox).GetId))

	containers, err := e.rt.ListContainers(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, ctrs, ids(containers, (*runtimeapi.Container).GetId))

	filtered, err := e.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: pods[1]})
	require.NoError(t, err)
	require.Equal(t, ctrs[2:4], ids(filtered, (*runtimeapi.Container).GetId))

	none, err := e.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: "nope"})
	require.NoError(t, err)
	require.Empty(t, none)

	cstats, err := e.rt.ListContainerStats(ctx, nil)
	require.NoError(t, err)
	require.Len(t, cstats, len(ctrs))

	pstats, err := e.rt.ListPodSandboxStats(ctx, nil)
	require.NoError(t, err)
	require.Len(t, pstats, len(pods))

	images, err := e.img.ListImages(ctx, nil)
	require.NoError(t, err)
	require.Len(t, images, 2)

	// Six containers in chunks of two arrive as three messages.
	conn, err := grpc.NewClient(e.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	stream, err := runtimeapi.NewRuntimeServiceClient(conn).StreamContainers(ctx, &runtimeapi.StreamContainersRequest{})
	require.NoError(t, err)
	var sizes []int
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		sizes = append(sizes, len(resp.Containers))
	}
	require.Equal(t, []int{2, 2, 2}, sizes)

	for stream, unary := range map[string]string{
		"StreamPodSandboxes":    "ListPodSandbox",
		"StreamContainers":      "ListContainers",
		"StreamContainerStats":  "ListContainerStats",
		"StreamPodSandboxStats": "ListPodSandboxStats",
		"StreamImages":          "ListImages",
	} {
		require.Positive(t, e.sim.Calls(stream), stream)
		require.Zero(t, e.sim.Calls(unary), "%s must not be used when streaming", unary)
	}
}

func ids[T any](items []T, id func(T) string) []string {
	var out []string
	for _, it := range items {
		out = append(out, id(it))
	}
	return out
}
