package eviction

import (
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func TestEvictionMessage(t *testing.T) {
	mem := hardQ(SignalMemoryAvailable, "100Mi")
	obs := Observations{SignalMemoryAvailable: {Available: 60 * Mi, Capacity: 4 * Gi}}
	hog := newPod("hog", withMemRequest("256Mi"))
	stats := statsByUID([]statsapi.PodStats{podStats(hog, podUsage{mem: Gi, rootfs: 10 * Mi, logs: 5 * Mi})})

	msg, ann := EvictionMessage(v1.ResourceMemory, hog, stats, []Threshold{mem}, obs)
	require.Equal(t, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 60Mi. "+
		"Container app was using 1Gi, request is 256Mi, has larger consumption of memory. ", msg)
	require.Equal(t, map[string]string{
		OffendingContainersKey: "app", OffendingContainersUsageKey: "1Gi", StarvedResourceKey: "memory",
	}, ann)

	// Within request: no container blamed.
	small := newPod("small", withMemRequest("2Gi"))
	msg, _ = EvictionMessage(v1.ResourceMemory, small, statsByUID([]statsapi.PodStats{podStats(small, podUsage{mem: Gi})}), []Threshold{mem}, obs)
	require.Equal(t, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 60Mi. ", msg)

	// Disk, percentage threshold, no request.
	fs := Threshold{Signal: SignalNodeFsAvailable, Value: ThresholdValue{Percentage: 0.1}}
	fsObs := Observations{SignalNodeFsAvailable: {Available: 5 * Gi, Capacity: 100 * Gi}}
	msg, _ = EvictionMessage(v1.ResourceEphemeralStorage, hog, stats, []Threshold{fs}, fsObs)
	require.Equal(t, "The node was low on resource: ephemeral-storage. Threshold quantity: 10737418400, available: 5Gi. "+ // float32 percentage, as upstream

		"Container app was using 15Mi, request is 0, has larger consumption of ephemeral-storage. ", msg)

	// Pod-level request.
	pl := newPod("pl")
	pl.Spec.Resources = &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("512Mi")}}
	msg, ann = EvictionMessage(v1.ResourceMemory, pl, statsByUID([]statsapi.PodStats{podStats(pl, podUsage{mem: Gi})}), []Threshold{mem}, obs)
	require.Contains(t, msg, "Pod pl was using 1Gi, request is 512Mi, has larger consumption of memory. ")
	require.Equal(t, "pl", ann[OffendingPodKey])

	// No stats: only the node part.
	msg, _ = EvictionMessage(v1.ResourceMemory, newPod("x"), statsByUID(nil), []Threshold{mem}, obs)
	require.Equal(t, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 60Mi. ", msg)
}

func TestAdmitPod(t *testing.T) {
	burstable := newPod("burstable", withMemRequest("1Gi"))
	bestEffort := newPod("besteffort")
	tolerant := newPod("tolerant")
	tolerant.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	tolerAll := newPod("tolerall")
	tolerAll.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}}
	wrongEffect := newPod("wrongeffect")
	wrongEffect.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
	critical := newPod("critical", withPriority(SystemCriticalPriority))
	mem := []v1.NodeConditionType{v1.NodeMemoryPressure}
	disk := []v1.NodeConditionType{v1.NodeDiskPressure}
	both := []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure}
	tests := []struct {
		name  string
		conds []v1.NodeConditionType
		pod   *v1.Pod
		admit bool
	}{
		{"no pressure", nil, bestEffort, true},
		{"memory: burstable", mem, burstable, true},
		{"memory: besteffort", mem, bestEffort, false},
		{"memory: besteffort tolerating", mem, tolerant, true},
		{"memory: besteffort tolerating everything", mem, tolerAll, true},
		{"memory: wrong effect", mem, wrongEffect, false},
		{"memory: critical", mem, critical, true},
		{"disk: burstable", disk, burstable, false},
		{"disk: critical", disk, critical, true},
		{"memory and disk: tolerating", both, tolerant, false},
		{"pid: burstable", []v1.NodeConditionType{v1.NodePIDPressure}, burstable, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := AdmitPod(tc.conds, tc.pod)
			require.Equal(t, tc.admit, r.Admit)
			if !tc.admit {
				require.Equal(t, "Evicted", r.Reason)
				require.Equal(t, "The node had condition: "+condString(tc.conds)+". ", r.Message)
			}
		})
	}
}

func condString(cs []v1.NodeConditionType) string {
	s := "["
	for i, c := range cs {
		if i > 0 {
			s += " "
		}
		s += string(c)
	}
	return s + "]"
}
