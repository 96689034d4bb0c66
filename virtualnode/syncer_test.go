package virtualnode

import (
	"context"
	"slices"
	"testing"
	"time"
	"unique"
	"unsafe"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeclient/clientset"
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

// cacheOf returns a pod cache holding pods as its reflector would give
// them (not run).
func cacheOf(t *testing.T, cs *fake.Clientset, trim bool, pods ...*v1.Pod) *podCache {
	t.Helper()
	c := newPodCache(Config{Client: clientset.Wrap(cs), TrimPodStatus: trim}, func(node string) bool { return node == "vn-0" })
	for _, p := range pods {
		putPod(t, c, p)
	}
	return c
}

// putPod gives p to c as the reflector gives a watch event and returns its
// entry (nil for a pod of a node not managed).
func putPod(t testing.TB, c *podCache, p *v1.Pod) *podEntry {
	t.Helper()
	require.NoError(t, c.Add(p))
	return c.entry(p.UID)
}

// inAPI returns the pod as the (fake) API server has it.
func inAPI(t *testing.T, cs *fake.Clientset, pod *v1.Pod) *v1.Pod {
	t.Helper()
	p, err := cs.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
	require.NoError(t, err)
	return p
}

// TestReportPatchesOwnedStatus: the agent patches only when the status
// differs from the API server's (as far as it knows, by digest); its
// patches make every field it owns what the provider reports, with no copy
// of the server's status, and leave what others own alone.
func TestReportPatchesOwnedStatus(t *testing.T) {
	ctx := context.Background()
	pod := testPod(v1.RestartPolicyAlways, nil)
	pod.Spec.NodeName = "vn-0"
	// The API's copy has a condition another controller owns.
	gate := v1.PodCondition{Type: "example.com/gate", Status: v1.ConditionTrue}
	pod.Status.Conditions = []v1.PodCondition{gate}
	pod.Status.QOSClass = v1.PodQOSBestEffort
	cs := fake.NewClientset(pod)
	c := cacheOf(t, cs, true, pod)
	cached := c.pod(pod.UID)
	require.Equal(t, []v1.PodCondition{gate}, cached.Status.Conditions, "trimmed to what the agent does not own")
	require.Equal(t, v1.PodQOSBestEffort, cached.Status.QOSClass)

	started := metav1.NewTime(t0)
	notReady := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [c]"}
	prov := &statusProvider{st: &v1.PodStatus{Phase: v1.PodPending, StartTime: &started, Message: "starting",
		PodIP: "10.64.0.1", PodIPs: []v1.PodIP{{IP: "10.64.0.1"}},
		Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}, notReady}}}
	s := &syncer{cfg: &Config{Client: clientset.Wrap(cs), Provider: prov, Clock: clocktesting.NewFakeClock(t0)}, cache: c,
		hostIP: func(string) string { return "10.0.0.1" }}
	// report is what a sync does; the informer's event then updates the
	// cache as the API server's watch would.
	report := func() {
		t.Helper()
		_, err := s.report(ctx, c.pod(pod.UID), nil)
		require.NoError(t, err)
	}
	event := func() {
		t.Helper()
		require.NoError(t, c.Update(inAPI(t, cs, pod)))
	}
	reportAndEvent := func() { report(); event() }

	reportAndEvent()
	require.Len(t, statusPatches(cs), 1, "the first report differs from the API's copy")
	require.NotContains(t, statusPatches(cs)[0], "example.com/gate", "another's condition is not sent")
	for _, f := range []string{"containerStatuses", "reason", "resources", "observedGeneration"} {
		require.NotContains(t, statusPatches(cs)[0], `"`+f+`":null`, "nothing to clear: the API's copy has none of it")
	}
	require.NotContains(t, statusPatches(cs)[0], "qosClass", "unchanged fields are not sent")
	got := inAPI(t, cs, pod).Status
	require.Equal(t, v1.PodPending, got.Phase)
	require.Equal(t, "10.0.0.1", got.HostIP)
	require.Equal(t, v1.PodQOSBestEffort, got.QOSClass)
	require.ElementsMatch(t, []v1.PodCondition{gate, prov.st.Conditions[0], notReady}, got.Conditions)

	// The same status again, with its time in another location and its
	// conditions in another order: no patch, before and after the event.
	local := metav1.NewTime(t0.In(time.FixedZone("x", 3600)))
	prov.st = prov.st.DeepCopy()
	prov.st.StartTime = &local
	slices.Reverse(prov.st.Conditions)
	reportAndEvent()
	report()
	require.Len(t, statusPatches(cs), 1, "an equal status is not sent again")

	// Running: the Ready condition loses its reason and message, the
	// message and the old address go, a provider's own condition comes.
	prov.st = prov.st.DeepCopy()
	prov.st.Phase, prov.st.Message = v1.PodRunning, ""
	prov.st.PodIP, prov.st.PodIPs = "10.64.0.2", []v1.PodIP{{IP: "10.64.0.2"}}
	warm := v1.PodCondition{Type: "provider.example.com/Warm", Status: v1.ConditionTrue}
	prov.st.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}, {Type: v1.PodReady, Status: v1.ConditionTrue}, warm}
	reportAndEvent()
	require.Len(t, statusPatches(cs), 2)
	require.NotContains(t, statusPatches(cs)[1], "example.com/gate\"")
	got = inAPI(t, cs, pod).Status
	require.Equal(t, v1.PodRunning, got.Phase)
	require.Empty(t, got.Message)
	require.Equal(t, []v1.PodIP{{IP: "10.64.0.2"}}, got.PodIPs)
	require.ElementsMatch(t, []v1.PodCondition{gate, {Type: v1.PodScheduled, Status: v1.ConditionTrue}, {Type: v1.PodReady, Status: v1.ConditionTrue}, warm},
		got.Conditions)
	report()
	require.Len(t, statusPatches(cs), 2, "nothing changed")

	// A kubelet condition the provider no longer reports is removed.
	prov.st = prov.st.DeepCopy()
	prov.st.Conditions = prov.st.Conditions[1:]
	reportAndEvent()
	require.Len(t, statusPatches(cs), 3)
	require.Contains(t, statusPatches(cs)[2], `{"$patch":"delete","type":"PodScheduled"}`)
	require.NotContains(t, statusPatches(cs)[2], `"type":"Initialized"`, "a condition the API's copy never had is not deleted")
	require.ElementsMatch(t, []v1.PodCondition{gate, {Type: v1.PodReady, Status: v1.ConditionTrue}, warm}, inAPI(t, cs, pod).Status.Conditions)

	// The kubelet API's view: the provider's status merged into the API's.
	view := s.current(ctx, c.pod(pod.UID))
	require.Equal(t, v1.PodRunning, view.Status.Phase)
	require.Len(t, view.Status.Conditions, 3, "the full status: %v", view.Status.Conditions)

	// After a restart (or a shard taken over) the cache knows the API's
	// status from the informer alone: an unchanged pod is not patched.
	c = cacheOf(t, cs, true, inAPI(t, cs, pod))
	s.cache = c
	report()
	require.Len(t, statusPatches(cs), 3, "nothing changed across the restart")

	// Another writer changes a field the agent owns: it is put back.
	changed := inAPI(t, cs, pod)
	changed.Status.Phase = v1.PodPending
	_, err := cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, changed, metav1.UpdateOptions{})
	require.NoError(t, err)
	event()
	reportAndEvent()
	require.Len(t, statusPatches(cs), 4)
	require.Equal(t, v1.PodRunning, inAPI(t, cs, pod).Status.Phase)
}

func TestPodCacheKeepsNothingOfOtherNodesPods(t *testing.T) {
	other := testPod(v1.RestartPolicyAlways, nil)
	other.Spec.NodeName = "real-node"
	other.Labels = map[string]string{"app": "x"}
	other.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}}
	c := cacheOf(t, fake.NewClientset(), false)
	got, err := c.transform(other)
	require.NoError(t, err)
	require.Equal(t, &podEntry{namespace: unique.Make(other.Namespace), name: other.Name, uid: other.UID,
		data: other.ResourceVersion, rvLen: uint32(len(other.ResourceVersion)), node: unique.Make("real-node"),
		phase: unique.Make(string(other.Status.Phase))}, got, "its identity only")
	require.Nil(t, c.decode(got))
	require.Nil(t, putPod(t, c, other), "not kept")
	require.NoError(t, c.Delete(other))
	_, known := c.lastStatus(other.UID)
	require.False(t, known)

	mine := other.DeepCopy()
	mine.Spec.NodeName = "vn-0"
	mine.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.1.0.1", Conditions: []v1.PodCondition{{Type: v1.PodReady}}}
	full, err := c.transform(mine)
	require.NoError(t, err)
	require.Equal(t, v1.PodRunning, full.podPhase())
	decoded := c.decode(full)
	want := mine.DeepCopy()
	want.ManagedFields = nil
	require.Equal(t, want, decoded, "the pod without its managed fields")
	require.NotNil(t, mine.ManagedFields, "the client's object is not modified")
	for _, s := range [][2]string{{string(full.uid), string(decoded.UID)}, {full.name, decoded.Name},
		{full.namespace.Value(), decoded.Namespace}, {full.nodeName(), decoded.Spec.NodeName}} {
		require.Same(t, unsafe.StringData(s[0]), unsafe.StringData(s[1]), "a decoded pod shares the entry's %q", s[0])
	}
	c.trim = true
	trimmed := putPod(t, c, mine)
	require.Equal(t, v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.1.0.1"}, c.decode(trimmed).Status)

	// Found by UID, each time a pod of its own.
	a, b := c.pod(mine.UID), c.pod(mine.UID)
	require.Equal(t, a, b)
	require.NotSame(t, a, b)
}

// TestPodCacheDeliversAsAnInformer: the handlers hear of each pod added,
// updated and deleted, of pods a relist lacks or adds, and a handler added
// late hears of every pod first.
func TestPodCacheDeliversAsAnInformer(t *testing.T) {
	c := newPodCache(Config{Client: clientset.Wrap(fake.NewClientset())}, func(node string) bool { return node == "vn-0" })
	var heard []string
	listen := func(who string) *podHandlers {
		return &podHandlers{
			added:   func(e *podEntry) { heard = append(heard, who+" added "+string(e.uid)) },
			updated: func(e *podEntry) { heard = append(heard, who+" updated "+string(e.uid)) },
			deleted: func(e *podEntry) { heard = append(heard, who+" deleted "+string(e.uid)) },
		}
	}
	pod := func(uid, name, node string) *v1.Pod {
		p := testPod(v1.RestartPolicyAlways, nil)
		p.UID, p.Name, p.Spec.NodeName = types.UID(uid), name, node
		return p
	}
	first := listen("first")
	c.addHandlers(first)
	require.False(t, c.hasSynced())
	// The initial list, as the watch-list's temporary store keeps it.
	tr := c.Transformer()
	listedA, err := tr(pod("a", "pa", "vn-0"))
	require.NoError(t, err)
	listedOther, err := tr(pod("o", "po", "real-node"))
	require.NoError(t, err)
	require.NoError(t, c.Replace([]any{listedA, listedOther, pod("b", "pb", "vn-0")}, "1"))
	require.True(t, c.hasSynced())
	require.Equal(t, []string{"first added a", "first added b"}, heard)

	heard = nil
	require.NoError(t, c.Update(pod("a", "pa", "vn-0")))
	require.NoError(t, c.Add(pod("c", "pc", "vn-0")))
	require.NoError(t, c.Add(pod("o2", "po2", "real-node")))
	require.Equal(t, []string{"first updated a", "first added c"}, heard)

	heard = nil
	late := listen("late")
	c.addHandlers(late)
	slices.Sort(heard)
	require.Equal(t, []string{"late added a", "late added b", "late added c"}, heard, "every pod, to the late handler only")

	// A relist: b was deleted while the watch was down, c deleted and
	// created again under its name with another UID.
	heard = nil
	c.removeHandlers(first)
	require.NoError(t, c.Replace([]any{pod("a", "pa", "vn-0"), pod("c2", "pc", "vn-0")}, "2"))
	require.Equal(t, []string{"late updated a", "late added c2", "late deleted b", "late deleted c"}, sortedTail(heard, 2))
	require.Nil(t, c.entry("b"))
	require.Nil(t, c.entry("c"))
	_, known := c.lastStatus("c")
	require.False(t, known, "nothing is left of the replaced pod")
	require.NotNil(t, c.entry("c2"))
	require.Equal(t, "c2", string(c.named("ns", "pc").uid))

	heard = nil
	deleted := pod("a", "pa", "vn-0")
	deleted.Status.Phase = v1.PodSucceeded
	require.NoError(t, c.Delete(deleted))
	require.NoError(t, c.Delete(deleted), "a pod the cache no longer has")
	require.Equal(t, []string{"late deleted a"}, heard)
	require.Nil(t, c.entry("a"))
	require.Nil(t, c.named("ns", "pa"))
	require.Error(t, c.Add(&v1.Node{}), "not a pod")
}

// sortedTail returns s with its last n elements sorted (deliveries in no
// order).
func sortedTail(s []string, n int) []string {
	slices.Sort(s[len(s)-n:])
	return s
}

// TestPodCacheListsPodsByNode: the pods of a managed node, as they come and
// go.
func TestPodCacheListsPodsByNode(t *testing.T) {
	c := newPodCache(Config{Client: clientset.Wrap(fake.NewClientset())}, func(node string) bool { return node != "real-node" })
	pods := map[string]*v1.Pod{}
	add := func(name, node string) *podEntry {
		p := testPod(v1.RestartPolicyAlways, nil)
		p.Name, p.UID, p.Spec.NodeName = name, types.UID("uid-"+name), node
		pods[name] = p
		return putPod(t, c, p)
	}
	names := func(node string) []string {
		var n []string
		for _, e := range c.podsOn(node) {
			n = append(n, e.name)
		}
		return n
	}
	add("a", "vn-0")
	add("b", "vn-0")
	add("c", "vn-1")
	add("d", "real-node")
	require.ElementsMatch(t, []string{"a", "b"}, names("vn-0"))
	require.ElementsMatch(t, []string{"c"}, names("vn-1"))
	require.Empty(t, names("real-node"), "another node's pods are not kept")
	require.Empty(t, names("vn-2"))
	require.Len(t, c.podsOn("vn-0", "vn-1", "vn-2"), 3)

	b2 := add("b", "vn-0") // an update
	require.ElementsMatch(t, []string{"a", "b"}, names("vn-0"))
	require.Same(t, b2, c.podsOn("vn-0")[slices.IndexFunc(c.podsOn("vn-0"), func(e *podEntry) bool { return e.name == "b" })], "the latest entry")
	require.NoError(t, c.Delete(pods["b"]))
	require.ElementsMatch(t, []string{"a"}, names("vn-0"))
	require.NoError(t, c.Delete(pods["a"]))
	require.Empty(t, names("vn-0"))
	require.Empty(t, c.onNode["vn-0"])
	require.ElementsMatch(t, []string{"c"}, names("vn-1"))
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
