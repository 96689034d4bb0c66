package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit/nodekit/crisim"
)

// The side-by-side status check. testdata/statuses/kubelet.json is the
// upstream v1.36.3 kubelet's `kubectl get pods -o json` of the pods of
// testdata/statuses/pods.yaml on the conformance cluster (containerd
// 2.2.9), captured by conformance/statuses.sh (UPDATE=1). The test runs the
// same pod specs through the reference agent on the CRI simulator and
// compares every status field, after masking what differs between any two
// runs of one kubelet (times, IDs, IPs, the number of restarts of a crash
// loop, back-off durations) and what only the runtime decides (the image
// ID, the image's user and groups, the registry's pull error text).
// statuses.sh runs the same comparison on two cluster captures by setting
// STATUSES_WANT and STATUSES_GOT.

// statusTimeKeys are the status fields holding a time.
var statusTimeKeys = map[string]bool{"startTime": true, "lastTransitionTime": true, "lastProbeTime": true, "startedAt": true, "finishedAt": true}

// durationRE matches the durations of back-off messages ("back-off 10s",
// "back-off 2m40s").
var durationRE = regexp.MustCompile(`\b\d+(m\d+)?(ms|s|m)\b`)

// foldPullCycle gives a container status in an image pull's failure cycle
// one shape. A failing pull alternates, as the kubelet's does, between
// ErrImagePull (the runtime's error, at each attempt) and ImagePullBackOff
// (`Back-off pulling image "<image>": ErrImagePull: <the error>`, in
// between); a single capture shows either, so an ErrImagePull is compared
// as the back-off that follows it.
func foldPullCycle(cs map[string]any) {
	state, _ := cs["state"].(map[string]any)
	w, _ := state["waiting"].(map[string]any)
	image, _ := cs["image"].(string)
	if w == nil || w["reason"] != "ErrImagePull" {
		return
	}
	msg, _ := w["message"].(string)
	w["reason"] = "ImagePullBackOff"
	w["message"] = fmt.Sprintf("Back-off pulling image %q: ErrImagePull: %s", image, msg)
}

// runtimeErrorRE matches the runtime's own text in a gRPC error.
var runtimeErrorRE = regexp.MustCompile(`desc = .*$`)

// normalizeStatus is pod's status as a JSON tree with what varies between
// runs masked; presence is kept, so a field one side writes and the other
// does not still differs.
func normalizeStatus(t testing.TB, pod *v1.Pod) map[string]any {
	t.Helper()
	raw, err := json.Marshal(pod.Status)
	require.NoError(t, err)
	var st map[string]any
	require.NoError(t, json.Unmarshal(raw, &st))
	images := map[string]string{}
	for _, c := range append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		images[c.Name] = c.Image
	}
	var walk func(key string, v any) any
	walk = func(key string, v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(k, e)
			}
			if name, ok := x["name"].(string); ok && x["image"] != nil {
				foldPullCycle(x)
				if x["image"] == images[name] {
					x["image"] = "<spec image>"
				}
			}
			if r, _ := x["reason"].(string); r == "ErrImagePull" || r == "ImagePullBackOff" {
				if msg, ok := x["message"].(string); ok {
					x["message"] = runtimeErrorRE.ReplaceAllString(msg, "desc = <the runtime's error>")
				}
			}
			return x
		case []any:
			for i, e := range x {
				x[i] = walk(key, e)
			}
			return x
		case string:
			switch {
			case x == "":
				return x
			case statusTimeKeys[key]:
				return "<time>"
			case key == "ip" || key == "hostIP" || key == "podIP":
				return "<ip>"
			case key == "containerID":
				return "<container id>"
			case key == "imageID":
				return "<image id>"
			case key == "message":
				return durationRE.ReplaceAllString(strings.ReplaceAll(x, string(pod.UID), "<uid>"), "<duration>")
			case key == "name" && strings.HasPrefix(x, "kube-api-access-"):
				return "kube-api-access-<x>"
			}
			return x
		case float64:
			if key == "restartCount" && x > 0 {
				return "≥1"
			}
			return x
		}
		return v
	}
	walk("", st)
	for _, key := range []string{"initContainerStatuses", "containerStatuses"} {
		list, _ := st[key].([]any)
		for _, e := range list {
			if m, ok := e.(map[string]any); ok {
				normalizeContainer(m)
			}
		}
	}
	dropUnlimitedMemory(st)
	return st
}

// normalizeContainer masks a container status's user (the uid, gid and
// groups the runtime found in the image) to its presence, and gives a
// container in a crash loop one shape: its latest exit as its state,
// whatever came before as "<an earlier exit>". The kubelet writes a
// status at the start of a sync from the previous sync's outcome, so
// through most of a short back-off it shows the exit itself
// (terminated), and CrashLoopBackOff only from the next sync; the agent
// writes at the end of the sync that met the back-off (waiting
// CrashLoopBackOff, the exit as lastState). A documented difference of
// timing, not of content.
func normalizeContainer(m map[string]any) {
	if m["user"] != nil {
		m["user"] = "<the image's user>"
	}
	state, _ := m["state"].(map[string]any)
	if w, ok := state["waiting"].(map[string]any); ok && w["reason"] == "CrashLoopBackOff" {
		if last, ok := m["lastState"].(map[string]any); ok && last["terminated"] != nil {
			m["state"], m["lastState"] = last, "<an earlier exit>"
		}
		return
	}
	if state["terminated"] != nil && m["restartCount"] == "≥1" {
		m["lastState"] = "<an earlier exit>"
	}
}

// dropUnlimitedMemory removes a pod-level memory limit of cgroup v1's
// "unlimited" (2^63 rounded to a page, 9007199254740988Ki): the kubelet
// reads a running pod's limits back from its pod cgroup and shows that
// value for a pod without a memory limit once a sync ran while the pod
// was Running (on cgroup v2 it shows none); the agent reports the
// allocated resources. A documented difference.
func dropUnlimitedMemory(st map[string]any) {
	r, _ := st["resources"].(map[string]any)
	limits, _ := r["limits"].(map[string]any)
	if s, ok := limits["memory"].(string); ok && s == "9007199254740988Ki" {
		delete(limits, "memory")
		if len(limits) == 0 {
			delete(r, "limits")
		}
	}
}

// readPodList reads a `kubectl get pods -o json` capture.
func readPodList(t testing.TB, path string) []v1.Pod {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var list v1.PodList
	require.NoError(t, json.Unmarshal(data, &list))
	require.NotEmpty(t, list.Items, path)
	return list.Items
}

// normalizedByName normalizes each pod's status, by pod name.
func normalizedByName(t testing.TB, pods []v1.Pod) map[string]map[string]any {
	out := map[string]map[string]any{}
	for i := range pods {
		out[pods[i].Name] = normalizeStatus(t, &pods[i])
	}
	return out
}

// statusDiffs lists, per pod of want, the status fields whose normalized
// values differ from got's ("pod: path: kubelet=… agent=…"); nil when
// every pod of want has got's status.
func statusDiffs(want, got map[string]map[string]any) []string {
	var out []string
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			out = append(out, name+": missing")
			continue
		}
		wf, gf := map[string]string{}, map[string]string{}
		flatten("", w, wf)
		flatten("", g, gf)
		for path, wv := range wf {
			if gv, ok := gf[path]; !ok {
				out = append(out, fmt.Sprintf("%s: %s: kubelet=%s agent=(absent)", name, path, wv))
			} else if gv != wv {
				out = append(out, fmt.Sprintf("%s: %s: kubelet=%s agent=%s", name, path, wv, gv))
			}
		}
		for path, gv := range gf {
			if _, ok := wf[path]; !ok {
				out = append(out, fmt.Sprintf("%s: %s: kubelet=(absent) agent=%s", name, path, gv))
			}
		}
	}
	sort.Strings(out)
	return out
}

// flatten records the leaves of a JSON tree by path; list elements are
// keyed by their name, type or ip where they have one, and an empty object
// or list is a leaf (present, but empty).
func flatten(path string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			out[path] = "{}"
		}
		for k, e := range x {
			flatten(path+"."+k, e, out)
		}
	case []any:
		if len(x) == 0 {
			out[path] = "[]"
		}
		for i, e := range x {
			key := fmt.Sprint(i)
			if s, ok := e.(string); ok {
				key = s // a list of names is a set
			}
			if m, ok := e.(map[string]any); ok {
				for _, k := range []string{"name", "type"} {
					if s, ok := m[k].(string); ok {
						key = s
						break
					}
				}
			}
			flatten(path+"["+key+"]", e, out)
		}
	default:
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(x)
		out[path] = strings.TrimSuffix(b.String(), "\n")
	}
}

// TestPodStatusesMatchKubelet: the reference agent on the CRI simulator
// writes, for each pod of the capture, the status the upstream kubelet
// wrote on containerd, field for field once times, identities and the
// runtime's own texts are masked.
func TestPodStatusesMatchKubelet(t *testing.T) {
	wantFile := os.Getenv("STATUSES_WANT")
	if wantFile == "" {
		wantFile = "testdata/statuses/kubelet.json"
	}
	captured := readPodList(t, wantFile)
	want := normalizedByName(t, captured)
	if gotFile := os.Getenv("STATUSES_GOT"); gotFile != "" {
		diffs := statusDiffs(want, normalizedByName(t, readPodList(t, gotFile)))
		assert.Empty(t, diffs, "%d of %d pods differ:\n%s", len(diffs), len(want), strings.Join(diffs, "\n\n"))
		return
	}

	const node, ns = "statuses-node", "statuses"
	admin := srv.AdminClient()
	ctx := context.Background()
	_, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	ensureDefaultServiceAccount(t, admin, ns)

	// The images the capture's pods ran are present; any other pull fails
	// as a registry without the image answers.
	var images []crisim.Image
	seen := map[string]bool{}
	for _, p := range captured {
		for _, c := range append(append([]v1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
			if !seen[c.Image] && !strings.Contains(c.Image, "no-such-image") {
				seen[c.Image] = true
				images = append(images, crisim.Image{Ref: c.Image})
			}
		}
	}
	sim := crisim.New(crisim.Config{Images: images})
	sim.Inject("PullImage", crisim.Fault{Err: status.Error(codes.NotFound, "failed to resolve reference: not found")})
	stop := runAgent(t, node, sim, "")
	defer stop()

	for _, p := range captured {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: ns, Annotations: p.Annotations, Labels: p.Labels}, Spec: p.Spec}
		pod.Spec.NodeName = node
		pod.Annotations = withoutKey(pod.Annotations, "kubectl.kubernetes.io/last-applied-configuration")
		_, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err, p.Name)
	}
	var diffs []string
	deadline := time.Now().Add(90 * time.Second)
	for {
		list, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		diffs = statusDiffs(want, normalizedByName(t, list.Items))
		if len(diffs) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	assert.Empty(t, diffs, "%d of %d pods differ from the kubelet's capture:\n%s", len(diffs), len(want), strings.Join(diffs, "\n\n"))
}

func withoutKey(m map[string]string, key string) map[string]string {
	if _, ok := m[key]; !ok {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// nodeDifferences are the Node fields in which the reference agent differs
// from the kubelet on purpose, each with the reason (docs and the blocks'
// docs say the same). A path listed here is reported, not failed.
var nodeDifferences = map[string]string{
	".status.declaredFeatures[ExtendWebSocketsToKubelet]": "ExtendWebSocketsToKubelet is not declared: kubeletapi does not translate WebSocket streams itself, so the API server must keep doing it",
	".metadata.annotations.nodekit.io/agent-id":           "nodeclaim's claim on the node name: one live agent per node, a second refuses to start",
}

// normalizeNode is the Node as a JSON tree with what differs between two
// registrations of one machine masked: times, identities, versions of the
// object; what the node reports (addresses, capacity, conditions with
// their reasons and messages, node info, images, handlers, features,
// labels and annotations) is kept.
func normalizeNode(t testing.TB, node *v1.Node) map[string]any {
	t.Helper()
	n := node.DeepCopy()
	n.ObjectMeta = metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, Annotations: n.Annotations}
	n.Spec.PodCIDR, n.Spec.PodCIDRs = "", nil // the controller manager's
	raw, err := json.Marshal(n)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	var walk func(key string, v any) any
	walk = func(key string, v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(k, e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(key, e)
			}
		case string:
			if key == "lastHeartbeatTime" || key == "lastTransitionTime" {
				return "<time>"
			}
		}
		return v
	}
	walk("", out)
	return out
}

// nodeDiffs compares two normalized Nodes field by field: the differences
// nodeDifferences documents, and the rest.
func nodeDiffs(want, got map[string]any) (documented, undocumented []string) {
	wf, gf := map[string]string{}, map[string]string{}
	flatten("", want, wf)
	flatten("", got, gf)
	add := func(path, line string) {
		if reason, ok := nodeDifferences[path]; ok {
			documented = append(documented, line+" ("+reason+")")
			return
		}
		undocumented = append(undocumented, line)
	}
	for path, wv := range wf {
		if gv, ok := gf[path]; !ok {
			add(path, fmt.Sprintf("%s: kubelet=%s agent=(absent)", path, wv))
		} else if gv != wv {
			add(path, fmt.Sprintf("%s: kubelet=%s agent=%s", path, wv, gv))
		}
	}
	for path, gv := range gf {
		if _, ok := wf[path]; !ok {
			add(path, fmt.Sprintf("%s: kubelet=(absent) agent=%s", path, gv))
		}
	}
	sort.Strings(documented)
	sort.Strings(undocumented)
	return documented, undocumented
}

func readNode(t testing.TB, path string) *v1.Node {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var n v1.Node
	require.NoError(t, json.Unmarshal(data, &n))
	return &n
}

// TestNodeMatchesKubelet compares the Node the reference agent registered
// and reports with the kubelet's on the same machine, as conformance/
// statuses.sh captures them (STATUSES_WANT_NODE, STATUSES_GOT_NODE); a
// simulated node has nothing of a real machine to compare, so without the
// captures the test checks the comparison itself.
func TestNodeMatchesKubelet(t *testing.T) {
	wantFile, gotFile := os.Getenv("STATUSES_WANT_NODE"), os.Getenv("STATUSES_GOT_NODE")
	if wantFile == "" || gotFile == "" {
		base := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u1", ResourceVersion: "1"},
			Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
				Message: "kubelet is posting ready status", LastHeartbeatTime: metav1.Now()}},
				DeclaredFeatures: []string{"ExtendWebSocketsToKubelet", "A", "B", "C"}}}
		other := base.DeepCopy()
		other.UID, other.ResourceVersion = "u2", "9"
		other.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(time.Now().Add(time.Hour))
		other.Status.DeclaredFeatures = other.Status.DeclaredFeatures[1:]
		doc, undoc := nodeDiffs(normalizeNode(t, base), normalizeNode(t, other))
		require.Empty(t, undoc, "times and identities are masked")
		require.Len(t, doc, 1, "a documented difference is reported")
		other.Status.Conditions[0].Message = "agent is ready"
		_, undoc = nodeDiffs(normalizeNode(t, base), normalizeNode(t, other))
		require.Equal(t, []string{`.status.conditions[Ready].message: kubelet="kubelet is posting ready status" agent="agent is ready"`}, undoc)
		return
	}
	doc, undoc := nodeDiffs(normalizeNode(t, readNode(t, wantFile)), normalizeNode(t, readNode(t, gotFile)))
	for _, d := range doc {
		t.Log("documented:", d)
	}
	assert.Empty(t, undoc, "%d Node fields differ from the kubelet's:\n%s", len(undoc), strings.Join(undoc, "\n"))
}
