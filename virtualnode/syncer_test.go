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
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
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

// cacheOf returns a pod cache holding pods as its informer would (not run).
func cacheOf(t *testing.T, cs *fake.Clientset, trim bool, pods ...*v1.Pod) *podCache {
	t.Helper()
	c := newPodCache(Config{Client: cs, TrimPodStatus: trim}, func(node string) bool { return node == "vn-0" })
	for _, p := range pods {
		e, err := c.transform(p, trim)
		require.NoError(t, err)
		require.NoError(t, c.inf.GetIndexer().Add(e))
	}
	return c
}

func TestReportPatchesOnlyChanges(t *testing.T) {
	ctx := context.Background()
	pod := testPod(v1.RestartPolicyAlways, nil)
	pod.Spec.NodeName = "vn-0"
	// The API's copy has a condition another controller owns.
	pod.Status.Conditions = []v1.PodCondition{{Type: "example.com/gate", Status: v1.ConditionTrue}}
	pod.Status.QOSClass = v1.PodQOSBestEffort
	cs := fake.NewClientset(pod)
	c := cacheOf(t, cs, true, pod)
	cached := c.pod(pod.UID)
	require.Empty(t, cached.Status.Conditions, "trimmed")
	require.Equal(t, v1.PodQOSBestEffort, cached.Status.QOSClass)

	started := metav1.NewTime(t0)
	prov := &statusProvider{st: &v1.PodStatus{Phase: v1.PodPending, StartTime: &started,
		Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}}}}
	s := &syncer{cfg: &Config{Client: cs, Provider: prov, Clock: clocktesting.NewFakeClock(t0)}, cache: c,
		hostIP: func(string) string { return "10.0.0.1" }}

	_, err := s.report(ctx, cached, nil)
	require.NoError(t, err)
	require.Len(t, statusPatches(cs), 1, "the first report differs from the API's copy")

	// The same status again, with its time in another location: no patch.
	local := metav1.NewTime(t0.In(time.FixedZone("x", 3600)))
	prov.st = prov.st.DeepCopy()
	prov.st.StartTime = &local
	prov.st.Conditions = append([]v1.PodCondition(nil), prov.st.Conditions...)
	_, err = s.report(ctx, cached, nil)
	require.NoError(t, err)
	require.Len(t, statusPatches(cs), 1, "an equal status is not sent again")

	// A change is sent as a change: only the phase, and the other
	// controller's condition is left alone.
	prov.st = prov.st.DeepCopy()
	prov.st.Phase = v1.PodRunning
	_, err = s.report(ctx, cached, nil)
	require.NoError(t, err)
	patches := statusPatches(cs)
	require.Len(t, patches, 2)
	var doc struct {
		Status map[string]json.RawMessage `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(patches[1]), &doc))
	require.Equal(t, []string{"phase"}, slices.Collect(maps.Keys(doc.Status)), "patch: %s", patches[1])

	// A condition the provider owns is written as it reports it.
	prov.st = prov.st.DeepCopy()
	prov.st.Conditions = append(prov.st.Conditions, v1.PodCondition{Type: "provider.example.com/Warm", Status: v1.ConditionTrue})
	_, err = s.report(ctx, cached, nil)
	require.NoError(t, err)
	require.Len(t, statusPatches(cs), 3)

	got := c.withStatus(cached)
	require.Equal(t, v1.PodRunning, got.Status.Phase)
	require.Equal(t, "10.0.0.1", got.Status.HostIP)
	require.True(t, got.Status.StartTime.Equal(&started))
	require.Len(t, got.Status.Conditions, 3, "the full status: %v", got.Status.Conditions)

	// After a restart (or a shard taken over) the cache knows the API's
	// status from the informer alone: an unchanged pod is not patched.
	inAPI, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	require.NoError(t, err)
	s.cache = cacheOf(t, cs, true, inAPI)
	_, err = s.report(ctx, s.cache.pod(pod.UID), nil)
	require.NoError(t, err)
	require.Len(t, statusPatches(cs), 3, "nothing changed across the restart")

	s.cache.forget(pod.UID)
	require.Same(t, cached, s.cache.withStatus(cached))
}

func TestPodCacheKeepsLittleOfOtherNodesPods(t *testing.T) {
	other := testPod(v1.RestartPolicyAlways, nil)
	other.Spec.NodeName = "real-node"
	other.Labels = map[string]string{"app": "x"}
	other.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}}
	c := cacheOf(t, fake.NewClientset(), false)
	got, err := c.transform(other, false)
	require.NoError(t, err)
	require.Equal(t, &podEntry{namespace: other.Namespace, name: other.Name, uid: other.UID,
		resourceVersion: other.ResourceVersion, node: "real-node"}, got)
	require.Nil(t, got.decode())
	_, known := c.lastStatus(other.UID)
	require.False(t, known)

	mine := other.DeepCopy()
	mine.Spec.NodeName = "vn-0"
	mine.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.1.0.1", Conditions: []v1.PodCondition{{Type: v1.PodReady}}}
	full, err := c.transform(mine, false)
	require.NoError(t, err)
	require.Equal(t, v1.PodRunning, full.phase)
	decoded := full.decode()
	require.Nil(t, decoded.ManagedFields)
	require.Equal(t, mine.Status, decoded.Status)
	require.Equal(t, mine.Labels, decoded.Labels)
	require.NotNil(t, mine.ManagedFields, "the client's object is not modified")
	trimmed, err := c.transform(mine, true)
	require.NoError(t, err)
	require.Equal(t, v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.1.0.1"}, trimmed.decode().Status)
	key, err := cache.MetaNamespaceKeyFunc(trimmed)
	require.NoError(t, err)
	require.Equal(t, mine.Namespace+"/"+mine.Name, key, "the informer's key of an entry")

	// Found by UID, each time a pod of its own; not once another pod took
	// its name.
	require.NoError(t, c.inf.GetIndexer().Add(trimmed))
	a, b := c.pod(mine.UID), c.pod(mine.UID)
	require.Equal(t, a, b)
	require.NotSame(t, a, b)
	again := mine.DeepCopy()
	again.UID = "recreated"
	recreated, err := c.transform(again, true)
	require.NoError(t, err)
	require.NoError(t, c.inf.GetIndexer().Update(recreated))
	c.onUpdate(trimmed, recreated) // the relist's update: old UID, new UID
	require.Nil(t, c.pod(mine.UID))
	_, known = c.lastStatus(mine.UID)
	require.False(t, known, "nothing is left of the replaced pod")
	require.NotNil(t, c.pod("recreated"))
	c.onUpdate(recreated, recreated)
	require.NotNil(t, c.pod("recreated"), "an update of the same pod keeps it")
	c.onDelete(cache.DeletedFinalStateUnknown{Key: key, Obj: recreated})
	require.Nil(t, c.pod("recreated"))
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
