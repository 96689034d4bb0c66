package podworkers

import (
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestEffectiveGracePeriod(t *testing.T) {
	spec := func(s *int64) *v1.Pod { return &v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: s}} }
	del := func(specS, delS int64) *v1.Pod {
		p := spec(&specS)
		p.DeletionGracePeriodSeconds = &delS
		return p
	}
	unset := gracePeriod{}
	set := func(s int64) gracePeriod { return gracePeriod{seconds: s, set: true} }
	override := func(s int64) *KillOptions { return &KillOptions{GracePeriodOverride: &s} }
	forced := func(s int64) *KillOptions { return &KillOptions{GracePeriodOverride: &s, Force: true} }
	tests := []struct {
		name          string
		prev          gracePeriod
		pod           *v1.Pod
		kill          *KillOptions
		want          int64
		wantShortened bool
	}{
		{name: "spec", prev: unset, pod: spec(ptr.To[int64](45)), want: 45},
		{name: "no spec: API default", prev: unset, pod: spec(nil), want: 30},
		{name: "no pod", prev: unset, want: 30},
		{name: "zero spec raised to 1", prev: unset, pod: spec(ptr.To[int64](0)), want: 1},
		{name: "deletion grace wins over spec", prev: unset, pod: del(30, 10), want: 10},
		{name: "override wins over spec", prev: unset, pod: spec(ptr.To[int64](30)), kill: override(5), want: 5},
		{name: "override may exceed spec when nothing is set", prev: unset, pod: spec(ptr.To[int64](30)), kill: override(60), want: 60},
		{name: "smaller of deletion and override", prev: unset, pod: del(30, 4), kill: override(8), want: 4},
		{name: "longer deletion ignored", prev: set(10), pod: del(30, 20), want: 10},
		{name: "longer override ignored", prev: set(10), pod: spec(ptr.To[int64](30)), kill: override(20), want: 10},
		{name: "spec ignored once set", prev: set(10), pod: spec(ptr.To[int64](5)), want: 10},
		{name: "shorter override shortens", prev: set(10), kill: override(3), want: 3, wantShortened: true},
		{name: "override 0 becomes 1", prev: set(10), kill: override(0), want: 1, wantShortened: true},
		{name: "negative override becomes 1", prev: unset, kill: override(-5), want: 1},
		{name: "forced 0 stays 0", prev: set(10), kill: forced(0), want: 0, wantShortened: true},
		{name: "force with a positive override", prev: set(10), kill: forced(2), want: 2, wantShortened: true},
		{name: "force does not apply to deletion grace", prev: unset, pod: del(30, 0), kill: forced(5), want: 1},
		{name: "forced 0 sticks", prev: set(0), kill: override(5), want: 0},
		{name: "forced 0 sticks against deletion", prev: set(0), pod: del(30, 0), want: 0},
		{name: "1 stays 1", prev: set(1), kill: override(0), want: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, shortened := effectiveGracePeriod(tc.prev, tc.pod, tc.kill)
			require.True(t, got.set)
			require.Equal(t, tc.want, got.seconds)
			require.Equal(t, tc.wantShortened, shortened)
			if tc.prev.set {
				require.LessOrEqual(t, got.seconds, tc.prev.seconds, "grace periods only shorten")
			}
		})
	}
}
