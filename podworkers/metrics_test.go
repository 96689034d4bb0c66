package podworkers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/kubetypes"
)

// TestMetrics scrapes the workers' registry after pods were created, one
// of them by a panicking syncer, and one killed to the end.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	r := &recordingSyncer{syncPod: func(_ context.Context, _ UpdateType, p *v1.Pod) (bool, error) {
		if p.Name == "boom" {
			panic("x")
		}
		return false, nil
	}}
	w, clk := newTestWorkers(t, r, func(c *Config) { c.Registerer = reg })
	_, err := New(Config{Syncer: r, Registerer: reg})
	require.ErrorIs(t, err, ErrInvalidConfig, "a second Workers on one registry is refused, not a panic")

	// Seen 3s ago by its source (the kubelet's config.seen annotation).
	seen := newPod("a", "pa", "1")
	seen.Annotations = map[string]string{kubetypes.ConfigFirstSeenAnnotationKey: epoch.Add(-3 * time.Second).Format(time.RFC3339Nano)}
	seen.Spec.Containers = []v1.Container{{Name: "app"}, {Name: "sidecar"}}
	apply(t, w,
		Update{Type: UpdateCreate, Pod: seen, StartTime: epoch.Add(-time.Second)},
		// No annotation: from the update's StartTime.
		Update{Type: UpdateCreate, Pod: newPod("b", "pb", "1"), StartTime: epoch.Add(-time.Second)},
		Update{Type: UpdateCreate, Pod: newPod("c", "boom", "1"), StartTime: epoch.Add(-time.Second)})
	w.ProcessPending(context.Background())
	clk.Step(2 * time.Second)
	apply(t, w, Update{Type: UpdateKill, Pod: newPod("b", "pb", "1"), StartTime: clk.Now()})
	w.ProcessPending(context.Background())

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP nodekit_pod_worker_syncer_panics_total Number of panics recovered from pod syncer calls.
# TYPE nodekit_pod_worker_syncer_panics_total counter
nodekit_pod_worker_syncer_panics_total 1
`), "nodekit_pod_worker_syncer_panics_total"))
	h := histograms(t, reg)
	require.Equal(t, sample{3, 3 + 1 + 1}, h["kubelet_pod_worker_start_duration_seconds"])
	require.Equal(t, uint64(3), h["kubelet_pod_worker_duration_seconds{create}"].count)
	require.InDelta(t, 3, h["kubelet_pod_worker_duration_seconds{create}"].sum, 1e-9, "each create took 1s since StartTime")
	require.Equal(t, uint64(1), h["kubelet_pod_worker_duration_seconds{kill}"].count, "the kill's terminating sync")
	require.Equal(t, uint64(1), h["kubelet_pod_worker_duration_seconds{terminated}"].count)
	require.Equal(t, sample{3, 2}, h["kubelet_containers_per_pod_count"], "three pods started, one with two containers")
}

type sample struct {
	count uint64
	sum   float64
}

// histograms returns each histogram series of reg, keyed by family name
// and, for a labelled series, {its label values}.
func histograms(t *testing.T, reg prometheus.Gatherer) map[string]sample {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]sample{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			if h == nil {
				continue
			}
			key := f.GetName()
			if l := m.GetLabel(); len(l) > 0 {
				key += "{" + l[0].GetValue() + "}"
			}
			out[key] = sample{h.GetSampleCount(), h.GetSampleSum()}
		}
	}
	return out
}

func TestNoRegistererNoMetrics(t *testing.T) {
	w, _ := newTestWorkers(t, &recordingSyncer{})
	require.Nil(t, w.metrics)
	apply(t, w, Update{Type: UpdateCreate, Pod: newPod("a", "pa", "1"), StartTime: epoch})
	w.ProcessPending(context.Background())
}
