package virtualnode

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// statusProvider reports a fixed status, whatever the pod.
type statusProvider struct {
	Provider
	st *v1.PodStatus
}

func (p *statusProvider) PodStatus(context.Context, *v1.Pod) (*v1.PodStatus, error) {
	return p.st, nil
}

// statusPatches returns the status patches the client received.
func statusPatches(cs *fake.Clientset) []string {
	var out []string
	for _, a := range cs.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetSubresource() == "status" {
			out = append(out, string(p.GetPatch()))
		}
	}
	return out
}

func TestReportPatchesOnlyChanges(t *testing.T) {
	ctx := context.Background()
	pod := testPod(v1.RestartPolicyAlways, nil)
	// The API's copy has a condition another controller owns.
	pod.Status.Conditions = []v1.PodCondition{{Type: "example.com/gate", Status: v1.ConditionTrue}}
	cs := fake.NewClientset(pod)
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{byUID: func(obj any) ([]string, error) {
		return []string{string(obj.(*v1.Pod).UID)}, nil
	}})
	require.NoError(t, idx.Add(pod))

	started := metav1.NewTime(t0)
	prov := &statusProvider{st: &v1.PodStatus{Phase: v1.PodPending, StartTime: &started,
		Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}}}}
	s := &syncer{cfg: &Config{Client: cs, Provider: prov}, pods: idx,
		hostIP: func(string) string { return "10.0.0.1" }, patched: make(map[types.UID][]byte)}

	_, err := s.report(ctx, pod, nil)
	require.NoError(t, err)
	require.Len(t, statusPatches(cs), 1, "the first report differs from the API's copy")

	// The same status again, with its time in another location: no patch.
	local := metav1.NewTime(t0.In(time.FixedZone("x", 3600)))
	prov.st = prov.st.DeepCopy()
	prov.st.StartTime = &local
	prov.st.Conditions = append([]v1.PodCondition(nil), prov.st.Conditions...)
	_, err = s.report(ctx, pod, nil)
	require.NoError(t, err)
	require.Len(t, statusPatches(cs), 1, "an equal status is not sent again")

	// A change is sent against the last status sent, not the API's copy:
	// only the phase, and the other controller's condition is left alone.
	prov.st = prov.st.DeepCopy()
	prov.st.Phase = v1.PodRunning
	_, err = s.report(ctx, pod, nil)
	require.NoError(t, err)
	patches := statusPatches(cs)
	require.Len(t, patches, 2)
	var doc struct {
		Status map[string]json.RawMessage `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(patches[1]), &doc))
	require.Equal(t, []string{"phase"}, slices.Collect(maps.Keys(doc.Status)), "patch: %s", patches[1])

	got := s.withStatus(pod)
	require.Equal(t, v1.PodRunning, got.Status.Phase)
	require.Equal(t, "10.0.0.1", got.Status.HostIP)
	require.True(t, got.Status.StartTime.Equal(&started))
	s.forget(pod.UID)
	require.Same(t, pod, s.withStatus(pod))
}

func TestStatusChanged(t *testing.T) {
	at := metav1.NewTime(t0)
	elsewhere := metav1.NewTime(t0.In(time.FixedZone("x", -7200)))
	a := &v1.PodStatus{Phase: v1.PodRunning, StartTime: &at, PodIPs: []v1.PodIP{}}
	b := &v1.PodStatus{Phase: v1.PodRunning, StartTime: &elsewhere}
	require.False(t, StatusChanged(a, b), "same instant, nil and empty lists: equal")
	later := metav1.NewTime(t0.Add(time.Second))
	b.StartTime = &later
	require.True(t, StatusChanged(a, b))
}
