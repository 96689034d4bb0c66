package podhandler

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit/nodekit/admission"
)

// TestHousekeepingMetrics scrapes the handler's registry after
// housekeeping passes over API pods (one refused by admission), a static
// pod with its mirror, an orphan in the runtime and a static pod whose UID
// came back after its worker finished.
func TestHousekeepingMetrics(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewPedanticRegistry()
	node := &nodeGetter{node: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}}}
	hs := newHarness(t, func(c *Config) {
		c.Registerer = reg
		c.MirrorClient, c.Node = fake.NewClientset().CoreV1(), node
		c.Admit = admitFunc(func(_ context.Context, attrs admission.Attributes) admission.Result {
			return admission.Result{Admit: attrs.Pod.Name != "refused", Reason: "NoWay", Message: "no"}
		})
	})
	static := staticPod("etcd", "hash-1")
	hs.h.HandlePodAdditions(ctx, []*v1.Pod{apiPod("a", 1), apiPod("b", 2), apiPod("refused", 3), static})
	hs.workers.ProcessPending(ctx)
	sb := func(id, uid string) *runtimeapi.PodSandbox {
		return &runtimeapi.PodSandbox{Id: id, State: runtimeapi.PodSandboxState_SANDBOX_READY,
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "x", Namespace: "default", Uid: uid}}
	}
	// One orphan pod with two ready sandboxes counts once.
	hs.runtime.sandboxes = []*runtimeapi.PodSandbox{sb("o1", "uid-orphan"), sb("o2", "uid-orphan")}
	require.NoError(t, hs.h.HandlePodCleanups(ctx))

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubelet_desired_pods [ALPHA] The number of pods the kubelet is being instructed to run. static is true if the pod is not from the apiserver.
# TYPE kubelet_desired_pods gauge
kubelet_desired_pods{static=""} 3
kubelet_desired_pods{static="true"} 1
# HELP kubelet_active_pods [ALPHA] The number of pods the kubelet considers active and which are being considered when admitting new pods. static is true if the pod is not from the apiserver.
# TYPE kubelet_active_pods gauge
kubelet_active_pods{static=""} 2
kubelet_active_pods{static="true"} 1
# HELP kubelet_mirror_pods [ALPHA] The number of mirror pods the kubelet will try to create (one per admitted static pod)
# TYPE kubelet_mirror_pods gauge
kubelet_mirror_pods 1
# HELP kubelet_orphaned_runtime_pods_total [ALPHA] Number of pods that have been detected in the container runtime without being already known to the pod worker. This typically indicates the kubelet was restarted while a pod was force deleted in the API or in the local configuration, which is unusual.
# TYPE kubelet_orphaned_runtime_pods_total counter
kubelet_orphaned_runtime_pods_total 1
# HELP kubelet_restarted_pods_total [ALPHA] Number of pods that have been restarted because they were deleted and recreated with the same UID while the kubelet was watching them (common for static pods, extremely uncommon for API pods)
# TYPE kubelet_restarted_pods_total counter
kubelet_restarted_pods_total{static=""} 0
kubelet_restarted_pods_total{static="true"} 0
`), "kubelet_desired_pods", "kubelet_active_pods", "kubelet_mirror_pods", "kubelet_orphaned_runtime_pods_total", "kubelet_restarted_pods_total"))
	working := func(lifecycle, config, static string) float64 {
		return testutil.ToFloat64(hs.h.metrics.working.WithLabelValues(lifecycle, config, static))
	}
	require.Equal(t, 15, testutil.CollectAndCount(hs.h.metrics.working), "every valid combination, 0 included")
	require.Equal(t, 2.0, working("sync", "desired", ""))
	require.Equal(t, 1.0, working("sync", "desired", "true"))
	require.Equal(t, 1.0, working("terminating", "runtime_only", "unknown"))

	// The static pod stops and its worker is forgotten; then the same UID
	// is desired again without the workers being told (a manifest put
	// back under the same UID): housekeeping restarts it.
	hs.h.HandlePodRemoves(ctx, []*v1.Pod{static})
	hs.workers.ProcessPending(ctx)
	hs.runtime.sandboxes = nil
	require.NoError(t, hs.h.HandlePodCleanups(ctx))
	hs.workers.ProcessPending(ctx)
	require.NoError(t, hs.h.HandlePodCleanups(ctx)) // the finished orphans are forgotten
	_, known := hs.workers.PodState(static.UID)
	require.False(t, known)
	hs.h.Pods().Set(static)
	require.NoError(t, hs.h.HandlePodCleanups(ctx))
	require.Equal(t, 1.0, testutil.ToFloat64(hs.h.metrics.restarted.WithLabelValues("true")))
	require.Equal(t, 0.0, testutil.ToFloat64(hs.h.metrics.restarted.WithLabelValues("")))
	require.Equal(t, 1.0, working("sync", "desired", "true"))
	require.Equal(t, 0.0, working("terminating", "runtime_only", "unknown"))

	_, err := New(Config{Workers: hs.workers, Registerer: reg})
	require.ErrorContains(t, err, "register metrics", "a second handler on one registry is refused, not a panic")
}

func TestNoRegistererNoMetrics(t *testing.T) {
	hs := newHarness(t, nil)
	require.Nil(t, hs.h.metrics)
	require.NoError(t, hs.h.HandlePodCleanups(context.Background()))
}
