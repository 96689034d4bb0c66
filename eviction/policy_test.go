package eviction

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

func hardQ(s Signal, q string) Threshold {
	return Threshold{Signal: s, Value: ThresholdValue{Quantity: qty(q)}}
}

func TestThresholdsMet(t *testing.T) {
	mem := hardQ(SignalMemoryAvailable, "1Gi")
	memReclaim := mem
	memReclaim.MinReclaim = &ThresholdValue{Quantity: qty("500Mi")}
	fsPct := Threshold{Signal: SignalNodeFsAvailable, Value: ThresholdValue{Percentage: 0.1}, MinReclaim: &ThresholdValue{Percentage: 0.05}}
	tests := []struct {
		name       string
		ts         []Threshold
		obs        Observations
		minReclaim bool
		want       int
	}{
		{"not met", []Threshold{mem}, Observations{SignalMemoryAvailable: {Available: 2 * Gi}}, false, 0},
		{"met", []Threshold{mem}, Observations{SignalMemoryAvailable: {Available: 500 * Mi}}, false, 1},
		{"equal is not met", []Threshold{mem}, Observations{SignalMemoryAvailable: {Available: Gi}}, false, 0},
		{"no observation", []Threshold{mem}, Observations{}, false, 0},
		{"min reclaim ignored", []Threshold{memReclaim}, Observations{SignalMemoryAvailable: {Available: 1200 * Mi}}, false, 0},
		{"min reclaim enforced", []Threshold{memReclaim}, Observations{SignalMemoryAvailable: {Available: 1200 * Mi}}, true, 1},
		{"min reclaim satisfied", []Threshold{memReclaim}, Observations{SignalMemoryAvailable: {Available: 1600 * Mi}}, true, 0},
		{"percentage met", []Threshold{fsPct}, Observations{SignalNodeFsAvailable: {Available: 9, Capacity: 100}}, false, 1},
		{"percentage reclaim", []Threshold{fsPct}, Observations{SignalNodeFsAvailable: {Available: 14, Capacity: 100}}, true, 1},
		{"percentage reclaim satisfied", []Threshold{fsPct}, Observations{SignalNodeFsAvailable: {Available: 15, Capacity: 100}}, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Len(t, thresholdsMet(tc.ts, tc.obs, tc.minReclaim), tc.want)
		})
	}
}

func TestGraceAndTransition(t *testing.T) {
	soft := hardQ(SignalMemoryAvailable, "1Gi")
	soft.GracePeriod = time.Minute
	hard := hardQ(SignalNodeFsAvailable, "1Gi")
	first := firstObservedAt([]Threshold{soft, hard}, nil, epoch)
	require.Equal(t, []Threshold{hard}, thresholdsMetGracePeriod([]Threshold{soft, hard}, first, epoch))
	later := epoch.Add(time.Minute)
	first = firstObservedAt([]Threshold{soft, hard}, first, later)
	require.Equal(t, epoch, first[soft.key()], "first observation is kept while met")
	require.Len(t, thresholdsMetGracePeriod([]Threshold{soft, hard}, first, later), 2)
	first = firstObservedAt([]Threshold{hard}, first, later)
	require.NotContains(t, first, soft.key(), "a threshold no longer met restarts its grace period")

	last := conditionsLastObservedAt([]v1.NodeConditionType{v1.NodeMemoryPressure}, nil, epoch)
	last = conditionsLastObservedAt(nil, last, epoch.Add(time.Minute))
	require.Equal(t, []v1.NodeConditionType{v1.NodeMemoryPressure}, conditionsObservedSince(last, 5*time.Minute, epoch.Add(5*time.Minute-1)))
	require.Empty(t, conditionsObservedSince(last, 5*time.Minute, epoch.Add(5*time.Minute)))
}

func TestNodeConditionsOf(t *testing.T) {
	got := nodeConditionsOf([]Threshold{
		hardQ(SignalMemoryAvailable, "1"), hardQ(SignalAllocatableMemoryAvailable, "1"),
		hardQ(SignalImageFsInodesFree, "1"), hardQ(SignalContainerFsAvailable, "1"), hardQ(SignalPIDAvailable, "1"),
	})
	require.Equal(t, []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure}, got)
}

func TestThresholdsUpdatedStats(t *testing.T) {
	th := []Threshold{hardQ(SignalMemoryAvailable, "1Gi")}
	t0 := Observations{SignalMemoryAvailable: {Time: epoch}}
	require.Len(t, thresholdsUpdatedStats(th, t0, nil), 1)
	require.Empty(t, thresholdsUpdatedStats(th, t0, t0), "a stale sample does not drive eviction twice")
	t1 := Observations{SignalMemoryAvailable: {Time: epoch.Add(time.Second)}}
	require.Len(t, thresholdsUpdatedStats(th, t1, t0), 1)
	require.Len(t, thresholdsUpdatedStats(th, Observations{SignalMemoryAvailable: {}}, Observations{SignalMemoryAvailable: {}}), 1, "no timestamp counts as fresh")
}

func TestSortByEvictionPriority(t *testing.T) {
	ts := []Threshold{hardQ(SignalNodeFsAvailable, "1"), hardQ(SignalPIDAvailable, "1"), hardQ(SignalAllocatableMemoryAvailable, "1"), hardQ(SignalMemoryAvailable, "1")}
	sortByEvictionPriority(ts)
	var got []Signal
	for _, th := range ts {
		got = append(got, th.Signal)
	}
	require.Equal(t, []Signal{SignalAllocatableMemoryAvailable, SignalMemoryAvailable, SignalNodeFsAvailable, SignalPIDAvailable}, got)
}

func TestDeriveContainerFsThresholds(t *testing.T) {
	in := []Threshold{
		hardQ(SignalNodeFsAvailable, "1Gi"), hardQ(SignalImageFsAvailable, "2Gi"),
		{Signal: SignalImageFsInodesFree, Value: ThresholdValue{Percentage: 0.05}, GracePeriod: time.Minute},
		hardQ(SignalContainerFsAvailable, "9Gi"),
	}
	tests := []struct {
		name             string
		dedicated, split bool
		want             map[Signal]string
	}{
		{"single fs follows nodefs", false, false, map[Signal]string{SignalContainerFsAvailable: "1Gi"}},
		{"dedicated imagefs follows imagefs", true, false, map[Signal]string{SignalContainerFsAvailable: "2Gi", SignalContainerFsInodesFree: "5%"}},
		{"split follows nodefs", true, true, map[Signal]string{SignalContainerFsAvailable: "1Gi"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[Signal]string{}
			for _, th := range deriveContainerFsThresholds(in, tc.dedicated, tc.split) {
				if th.Signal == SignalContainerFsAvailable || th.Signal == SignalContainerFsInodesFree {
					got[th.Signal] = th.Value.String()
				}
			}
			require.Equal(t, tc.want, got)
		})
	}
}
