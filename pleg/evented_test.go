package pleg

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nodekit/nodekit/crisim"
)

func TestEvented(t *testing.T) {
	e := newEnv(t)
	hook := &hookRuntime{RuntimeService: e.rt}
	reg := prometheus.NewPedanticRegistry()
	g := e.gen(t, Config{Runtime: hook, Evented: true, StreamBackoffInitial: 10 * time.Second, Registerer: reg})
	sb := e.runPod(t, "web")
	running(t, g)
	require.Equal(t, ev(uidOf("web"), ContainerStarted, sb), next(t, g))
	require.Eventually(t, g.streamUp.Load, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return g.period() == DefaultEventedRelistPeriod }, time.Second, time.Millisecond)

	// Runtime events reach the consumer without any clock step.
	app := e.startContainer(t, sb, "web", "app")
	require.Equal(t, ev(uidOf("web"), ContainerStarted, app), next(t, g))
	require.NoError(t, e.sim.ExitContainer(app, 2, ""))
	require.Equal(t, ev(uidOf("web"), ContainerDied, app), next(t, g))
	st, _ := g.Cache().Get(uidOf("web"))
	require.Equal(t, int32(2), st.ContainerStatuses[0].ExitCode, "the cache was updated before the event")
	require.NoError(t, g.Healthy())

	// A pod worker waiting for fresh status is answered by a pod relist.
	minTime := e.clock.Now()
	e.clock.Step(time.Millisecond)
	require.NoError(t, g.Cache().WaitNewerThan(context.Background(), uidOf("web"), minTime))

	// The stream breaks: relist at once, then every second, and reconnect
	// with backoff.
	e.sim.Inject("GetContainerEvents", crisim.Fault{Err: status.Error(codes.Unavailable, "no stream"), Times: 1})
	cut := e.clock.Now()
	hook.cut()
	require.Eventually(t, func() bool { return !g.streamUp.Load() }, 5*time.Second, time.Millisecond)
	require.Equal(t, DefaultRelistPeriod, g.period())
	// stepUntil advances the clock in small steps until cond holds; the
	// loop, the reconnection backoff and in-flight calls all wait on it.
	stepUntil := func(cond func() bool) {
		t.Helper()
		require.Eventually(t, func() bool {
			if cond() {
				return true
			}
			e.clock.Step(100 * time.Millisecond)
			return false
		}, 10*time.Second, time.Millisecond)
	}
	side := e.startContainer(t, sb, "web", "side")
	var got []PodLifecycleEvent
	stepUntil(func() bool { got = append(got, drain(g)...); return len(got) > 0 })
	require.Equal(t, []PodLifecycleEvent{ev(uidOf("web"), ContainerStarted, side)}, got, "relisting covers the outage")

	stepUntil(func() bool { return metricValue(t, reg, "kubelet_evented_pleg_connection_error_count") == 2 })
	failed := e.clock.Now()
	require.GreaterOrEqual(t, failed.Sub(cut), 10*time.Second, "first retry after the initial backoff")
	require.False(t, g.streamUp.Load())
	stepUntil(g.streamUp.Load)
	require.GreaterOrEqual(t, e.clock.Now().Sub(failed), 20*time.Second, "the backoff doubled")
	require.Equal(t, float64(2), metricValue(t, reg, "kubelet_evented_pleg_connection_success_count"))

	// Events flow again.
	job := e.startContainer(t, sb, "web", "job")
	require.Equal(t, ev(uidOf("web"), ContainerStarted, job), next(t, g))
	require.Positive(t, metricValue(t, reg, "kubelet_evented_pleg_connection_latency_seconds"))
	require.Positive(t, metricValue(t, reg, "kubelet_pleg_relist_duration_seconds"))
	require.Positive(t, metricValue(t, reg, "kubelet_pleg_relist_interval_seconds"))
	require.Positive(t, metricValue(t, reg, "kubelet_pleg_pod_relist_duration_seconds"))
	require.Positive(t, metricValue(t, reg, "nodekit_pleg_events_total"))
	require.Empty(t, drain(g), "no duplicated events")
}
