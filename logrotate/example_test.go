package logrotate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/logrotate"
)

// A running container's log over MaxSize is rotated, and the runtime is
// asked to reopen it.
func Example() {
	dir, _ := os.MkdirTemp("", "logrotate")
	defer os.RemoveAll(dir)
	log := filepath.Join(dir, "0.log")
	_ = os.WriteFile(log, []byte("2026-01-01T00:00:00Z stdout F a long line\n"), 0o640)

	rt := critesting.NewFakeRuntimeService()
	rt.SetFakeContainers([]*critesting.FakeContainer{{ContainerStatus: runtimeapi.ContainerStatus{
		Id: "c1", State: runtimeapi.ContainerState_CONTAINER_RUNNING, LogPath: log,
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"}}}})
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m, err := logrotate.New(logrotate.Config{Runtime: rt, MaxSize: 16, Clock: clk})
	if err != nil {
		panic(err)
	}
	_ = m.RotateLogs(context.Background())
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		fmt.Println(e.Name())
	}
	fmt.Println(rt.Called[len(rt.Called)-1])
	// Output:
	// 0.log.20260101-000000
	// ReopenContainerLog
}
