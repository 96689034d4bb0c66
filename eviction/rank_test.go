package eviction

import (
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit/nodekit/kubetypes"
)

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

type rankCase struct {
	pod   *v1.Pod
	usage *podUsage // nil: no stats
}

func rank(cases []rankCase, s Signal, dedicated, split bool) []string {
	var pods []*v1.Pod
	var stats []statsapi.PodStats
	for _, c := range cases {
		pods = append(pods, c.pod)
		if c.usage != nil {
			stats = append(stats, podStats(c.pod, *c.usage))
		}
	}
	RankForEviction(pods, s, statsByUID(stats), dedicated, split)
	return names(pods)
}

func TestRankMemory(t *testing.T) {
	// Mirrors upstream's TestOrderedByExceedsRequestMemory,
	// TestOrderedByPriority and TestOrderedbyMemory.
	tests := []struct {
		name  string
		cases []rankCase
		want  []string
	}{
		{
			name: "exceeding requests first",
			cases: []rankCase{
				{newPod("below", withMemRequest("200Mi")), &podUsage{mem: 100 * Mi}},
				{newPod("above", withMemRequest("100Mi")), &podUsage{mem: 150 * Mi}},
			},
			want: []string{"above", "below"},
		},
		{
			name: "then lower priority",
			cases: []rankCase{
				{newPod("high", withPriority(100)), &podUsage{mem: 500 * Mi}},
				{newPod("low", withPriority(-10)), &podUsage{mem: 100 * Mi}},
			},
			want: []string{"low", "high"},
		},
		{
			name: "then usage above request",
			cases: []rankCase{
				{newPod("besteffort-small"), &podUsage{mem: 100 * Mi}},
				{newPod("burstable-big", withMemRequest("100Mi")), &podUsage{mem: 400 * Mi}},
				{newPod("besteffort-big"), &podUsage{mem: 200 * Mi}},
			},
			want: []string{"burstable-big", "besteffort-big", "besteffort-small"},
		},
		{
			name: "missing stats first",
			cases: []rankCase{
				{newPod("hog"), &podUsage{mem: Gi}},
				{newPod("unknown", withPriority(1000)), nil},
			},
			want: []string{"unknown", "hog"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, rank(tc.cases, SignalMemoryAvailable, false, false))
		})
	}
}

func TestRankDisk(t *testing.T) {
	cases := []rankCase{
		{newPod("logs"), &podUsage{logs: 300 * Mi}},
		{newPod("rootfs"), &podUsage{rootfs: 200 * Mi}},
		{newPod("requested", withStorageRequest("1Gi")), &podUsage{rootfs: 900 * Mi}},
	}
	require.Equal(t, []string{"logs", "rootfs", "requested"}, rank(cases, SignalNodeFsAvailable, false, false))
	// With a dedicated imagefs, nodefs pressure only counts logs and volumes
	// and imagefs pressure only writable layers.
	require.Equal(t, []string{"logs", "rootfs", "requested"}, rank(cases, SignalNodeFsAvailable, true, false))
	require.Equal(t, []string{"rootfs", "logs", "requested"}, rank(cases, SignalImageFsAvailable, true, false))
	inodes := []rankCase{
		{newPod("few"), &podUsage{rootInodes: 10}},
		{newPod("many"), &podUsage{rootInodes: 1000}},
	}
	require.Equal(t, []string{"many", "few"}, rank(inodes, SignalNodeFsInodesFree, false, false))
}

func TestRankPIDs(t *testing.T) {
	cases := []rankCase{
		{newPod("few"), &podUsage{procs: 10}},
		{newPod("critical-ish", withPriority(1000)), &podUsage{procs: 5000}},
		{newPod("many"), &podUsage{procs: 100}},
		{newPod("nostats"), nil},
	}
	require.Equal(t, []string{"nostats", "many", "few", "critical-ish"}, rank(cases, SignalPIDAvailable, false, false))
}

func TestIsCriticalPod(t *testing.T) {
	require.False(t, IsCriticalPod(newPod("a")))
	require.False(t, IsCriticalPod(newPod("a", withAnnotation(kubetypes.ConfigSourceAnnotationKey, "api"))))
	require.True(t, IsCriticalPod(newPod("a", withAnnotation(kubetypes.ConfigSourceAnnotationKey, "file"))))
	require.True(t, IsCriticalPod(newPod("a", withAnnotation(v1.MirrorPodAnnotationKey, "x"))))
	require.True(t, IsCriticalPod(newPod("a", withPriority(SystemCriticalPriority))))
	require.False(t, IsCriticalPod(newPod("a", withPriority(SystemCriticalPriority-1))))
}

func TestPodRequest(t *testing.T) {
	p := newPod("p", withMemRequest("100Mi"))
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "b", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("50Mi")}}})
	require.Equal(t, int64(150*Mi), podRequest(p, v1.ResourceMemory))
	p.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}}}}
	require.Equal(t, int64(Gi), podRequest(p, v1.ResourceMemory), "an init container's larger request wins")
	p.Spec.Overhead = v1.ResourceList{v1.ResourceMemory: resource.MustParse("10Mi")}
	require.Equal(t, int64(Gi+10*Mi), podRequest(p, v1.ResourceMemory))
	require.Equal(t, int64(0), podRequest(newPod("be"), v1.ResourceMemory))
}
