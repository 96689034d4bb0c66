package eviction

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/stats"
)

// TestCRISimRaisingMemoryEvictsThatPod serves a CRI simulator on a unix
// socket, reads pod usage through cri-client, and checks that the pod whose
// memory grows past its request is the one evicted when allocatable memory
// runs low.
func TestCRISimRaisingMemoryEvictsThatPod(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // runs after the simulator stops
	ctx := context.Background()
	fc := clocktesting.NewFakeClock(epoch)
	const image = "example.com/app:v1"
	sim, endpoint := crisim.Start(t, crisim.Config{Clock: fc, Images: []crisim.Image{{Ref: image, Size: Mi}}})
	rt, err := remote.NewRemoteRuntimeService(ctx, endpoint, 10*time.Second, nil, false)
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Close(ctx)) }()

	var pods []simPod
	for _, name := range []string{"web", "cache", "batch"} {
		uid := "uid-" + name
		sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid}}
		sb, err := rt.RunPodSandbox(ctx, sbCfg, "")
		require.NoError(t, err)
		cid, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image:    &runtimeapi.ImageSpec{Image: image},
			Labels:   map[string]string{podUIDLabel: uid},
		}, sbCfg)
		require.NoError(t, err)
		require.NoError(t, rt.StartContainer(ctx, cid))
		require.NoError(t, sim.SetContainerStats(cid, crisim.ContainerUsage{MemoryWorkingSetBytes: 200 * Mi}))
		p := newPod(name, withMemRequest("256Mi"))
		p.UID = types.UID(uid)
		pods = append(pods, simPod{p, sb, cid})
	}

	provider, err := stats.New(stats.Config{NodeFsPath: "/", AllocatableMemory: Gi, Runtime: rt, Clock: fc})
	require.NoError(t, err)
	ts, err := ParseThresholds(ThresholdSpec{Hard: map[string]string{"memory.available": "100Mi"}})
	require.NoError(t, err)
	active := map[types.UID]simPod{}
	for _, p := range pods {
		active[p.pod.UID] = p
	}
	var evicted []string
	m, err := New(Config{
		Thresholds: ts[1:], // allocatableMemory.available only: the real host is not under pressure
		Summary:    provider,
		ActivePods: func() []*v1.Pod {
			var out []*v1.Pod
			for _, p := range pods {
				if _, ok := active[p.pod.UID]; ok {
					out = append(out, p.pod)
				}
			}
			return out
		},
		KillPod: func(ctx context.Context, pod *v1.Pod, grace int64, update func(*v1.PodStatus)) error {
			evicted = append(evicted, pod.Name)
			sb := active[pod.UID].sandbox
			delete(active, pod.UID)
			update(&pod.Status)
			return rt.StopPodSandbox(ctx, sb)
		},
		Clock: fc,
	})
	require.NoError(t, err)

	res, err := m.Synchronize(ctx)
	require.NoError(t, err)
	require.Nil(t, res.Evicted, "600Mi of 1Gi used")
	require.Equal(t, int64(Gi-600*Mi), res.Observations[SignalAllocatableMemoryAvailable].Available)

	// "cache" grows to 700Mi: 1100Mi > 1Gi allocatable.
	require.NoError(t, sim.SetContainerStats(pods[1].container, crisim.ContainerUsage{MemoryWorkingSetBytes: 700 * Mi}))
	fc.Step(time.Second)
	res, err = m.Synchronize(ctx)
	require.NoError(t, err)
	require.NotNil(t, res.Evicted)
	require.Equal(t, []string{"cache"}, evicted)
	require.True(t, m.IsUnderMemoryPressure())
	require.Equal(t, v1.PodFailed, pods[1].pod.Status.Phase)
	require.Contains(t, res.Message, "Container app was using 700Mi, request is 256Mi, has larger consumption of memory.")

	// The stopped sandbox no longer reports usage: pressure is relieved.
	fc.Step(time.Second)
	res, err = m.Synchronize(ctx)
	require.NoError(t, err)
	require.Nil(t, res.Evicted)
	require.Equal(t, int64(Gi-400*Mi), res.Observations[SignalAllocatableMemoryAvailable].Available)
}

// podUIDLabel is the label the kubelet puts on every container with the UID
// of its pod.
const podUIDLabel = "io.kubernetes.pod.uid"

// simPod is a pod running in the CRI simulator.
type simPod struct {
	pod       *v1.Pod
	sandbox   string
	container string
}

// TestLocalStorageFromStatsProvider: with stats.Provider, a pod's logs,
// its volumes and its containers' writable layers make its local ephemeral
// storage, and an emptyDir over its sizeLimit gets the pod evicted.
func TestLocalStorageFromStatsProvider(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	ctx := context.Background()
	fc := clocktesting.NewFakeClock(epoch)
	const image = "example.com/app:v1"
	sim, endpoint := crisim.Start(t, crisim.Config{Clock: fc, Images: []crisim.Image{{Ref: image, Size: Mi}}})
	rt, err := remote.NewRemoteRuntimeService(ctx, endpoint, 10*time.Second, nil, false)
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Close(ctx)) }()
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"}}
	sb, err := rt.RunPodSandbox(ctx, sbCfg, "")
	require.NoError(t, err)
	cid, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image: &runtimeapi.ImageSpec{Image: image}, Labels: map[string]string{podUIDLabel: "uid-web"}}, sbCfg)
	require.NoError(t, err)
	require.NoError(t, rt.StartContainer(ctx, cid))
	require.NoError(t, sim.SetContainerStats(cid, crisim.ContainerUsage{WritableLayerBytes: 3 * Mi, WritableLayerInodes: 3}))

	logs := t.TempDir()
	dir := filepath.Join(logs, "default_web_uid-web", "app")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "0.log"), make([]byte, Mi), 0o644))
	scratch := uint64(5 * Mi)
	volumes := func(uid string) []stats.PodVolume {
		if uid != "uid-web" {
			return nil
		}
		return []stats.PodVolume{{Name: "scratch", UsedBytes: scratch, InodesUsed: 10, LocalEphemeral: true, Time: fc.Now()},
			{Name: "secret", UsedBytes: Mi, InodesUsed: 2, Time: fc.Now()}}
	}
	p, err := stats.New(stats.Config{NodeFsPath: "/", Runtime: rt, Clock: fc, PodLogsDir: logs, PodVolumes: volumes})
	require.NoError(t, err)
	s, err := p.Get(ctx)
	require.NoError(t, err)
	require.Len(t, s.Pods, 1)
	ps := s.Pods[0]
	require.GreaterOrEqual(t, *ps.Containers[0].Logs.UsedBytes, uint64(Mi))
	require.Len(t, ps.VolumeStats, 2)
	es := *ps.EphemeralStorage.UsedBytes
	require.GreaterOrEqual(t, es, uint64(9*Mi), "3Mi layer + 1Mi logs + 5Mi emptyDir")
	require.Less(t, es, uint64(10*Mi), "the secret volume is not local ephemeral storage")

	pod := newPod("web")
	pod.UID = "uid-web"
	limit := resource.MustParse("4Mi")
	pod.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	var evicted string
	m, err := New(Config{Summary: p, ActivePods: func() []*v1.Pod { return []*v1.Pod{pod} },
		KillPod: func(_ context.Context, pod *v1.Pod, _ int64, _ func(*v1.PodStatus)) error {
			evicted = pod.Name
			return nil
		}, Clock: fc})
	require.NoError(t, err)
	res, err := m.Synchronize(ctx)
	require.NoError(t, err)
	require.Equal(t, "web", evicted)
	require.Contains(t, res.Message, `Usage of EmptyDir volume "scratch" exceeds the limit "4Mi".`)
}
