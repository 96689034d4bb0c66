package imagegc_test

import (
	"context"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/imagegc"
)

// An image filesystem 90% full: the collector removes the unused image
// (the one no container was created from) to get back under 80%.
func Example() {
	images := testing.NewFakeImageService()
	images.SetFakeImages([]string{"app:v1", "old:v1"})
	runtime := testing.NewFakeRuntimeService()
	runtime.SetFakeContainers([]*testing.FakeContainer{{ContainerStatus: runtimeapi.ContainerStatus{
		Id: "c1", ImageRef: "app:v1", Metadata: &runtimeapi.ContainerMetadata{Name: "app"}}}})
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	gc, err := imagegc.New(imagegc.Config{Images: images, Containers: runtime, Clock: clk,
		ImageFs: func(context.Context) (imagegc.FsStats, error) {
			return imagegc.FsStats{CapacityBytes: 1000, AvailableBytes: 100}, nil
		}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	_ = gc.GarbageCollect(ctx) // first sight of both images: younger than MinAge
	clk.Step(imagegc.DefaultMinAge)
	_ = gc.GarbageCollect(ctx)
	left, _ := images.ListImages(ctx, nil)
	for _, img := range left {
		fmt.Println(img.Id)
	}
	// Output: app:v1
}
