package podstatustest_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/podstatus/podstatustest"
)

func TestManager(t *testing.T) {
	var m podstatustest.Manager
	a := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "a"}}
	b := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "b"}}
	_, ok := m.PodStatus("a")
	require.False(t, ok)

	st := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady}}}
	m.SetPodStatus(a, st)
	st.Conditions[0].Type = "changed" // the fake kept a copy
	m.SetPodStatus(b, v1.PodStatus{Phase: v1.PodPending})
	m.TerminatePod(a)
	m.Finish(a)
	got, ok := m.PodStatus("a")
	require.True(t, ok)
	require.Equal(t, v1.PodReady, got.Conditions[0].Type)

	m.RemoveOrphans(func(uid types.UID) bool { return uid == "b" })
	_, ok = m.PodStatus("a")
	require.False(t, ok)
	require.Equal(t, []string{"SetPodStatus a Running", "SetPodStatus b Pending", "TerminatePod a", "Finish a", "RemoveOrphans a"}, m.Calls())
}

// A test hands the fake to the block under test in place of the real
// manager, then reads what the block set.
func ExampleManager() {
	var m podstatustest.Manager
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}}
	m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodSucceeded})
	st, _ := m.PodStatus("uid-1")
	fmt.Println(st.Phase, m.Calls())
	// Output: Succeeded [SetPodStatus uid-1 Succeeded]
}
