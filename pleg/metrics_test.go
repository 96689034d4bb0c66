package pleg

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// TestRunningPodsAndContainers: kubelet_running_pods counts the pods with
// a ready sandbox and kubelet_running_containers the containers by state,
// as the cache holds them when scraped.
func TestRunningPodsAndContainers(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewPedanticRegistry()
	g := e.gen(t, Config{Registerer: reg})
	want := func(pods, created, running, exited int) {
		t.Helper()
		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubelet_running_pods [ALPHA] Number of pods that have a running pod sandbox
# TYPE kubelet_running_pods gauge
kubelet_running_pods `+strconv.Itoa(pods)+`
# HELP kubelet_running_containers [ALPHA] Number of containers currently running
# TYPE kubelet_running_containers gauge
kubelet_running_containers{container_state="created"} `+strconv.Itoa(created)+`
kubelet_running_containers{container_state="exited"} `+strconv.Itoa(exited)+`
kubelet_running_containers{container_state="running"} `+strconv.Itoa(running)+`
kubelet_running_containers{container_state="unknown"} 0
`), "kubelet_running_pods", "kubelet_running_containers"))
	}
	want(0, 0, 0, 0)

	web := e.runPod(t, "web")
	e.startContainer(t, web, "web", "app")
	side := e.startContainer(t, web, "web", "sidecar")
	e.createContainer(t, web, "web", "later")
	done := e.runPod(t, "done")
	last := e.startContainer(t, done, "done", "job")
	relist(t, g)
	want(2, 1, 3, 0)

	require.NoError(t, e.sim.ExitContainer(side, 0, ""))
	require.NoError(t, e.sim.ExitContainer(last, 0, ""))
	require.NoError(t, e.rt.StopPodSandbox(context.Background(), done))
	relist(t, g)
	want(1, 1, 1, 2)

	// A single-pod relist counts at once (evented mode's path).
	require.NoError(t, e.rt.StopPodSandbox(context.Background(), web))
	_, err := g.RelistPod(context.Background(), uidOf("web"))
	require.NoError(t, err)
	want(0, 1, 0, 3)
}

func TestMetricsRegisterOnce(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	e.gen(t, Config{Registerer: reg})
	_, err := New(Config{Runtime: e.rt, Registerer: reg, Clock: e.clock})
	var are prometheus.AlreadyRegisteredError
	require.ErrorAs(t, err, &are, "a second generator on one registry is refused, not a panic")
	_, err = New(Config{Runtime: e.rt, Clock: e.clock})
	require.NoError(t, err, "no registerer, no metrics")
}
