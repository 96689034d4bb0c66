package integration

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/nodekit/nodekit/syncloop"
)

// recordingHandler keeps, per pod name, the ops the loop dispatched.
type recordingHandler struct {
	mu  sync.Mutex
	ops map[string][]string
}

func (h *recordingHandler) add(op string, pods []*v1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range pods {
		h.ops[p.Name] = append(h.ops[p.Name], op)
	}
}

func (h *recordingHandler) seen(name string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.ops[name]...)
}

func (h *recordingHandler) HandlePodAdditions(_ context.Context, p []*v1.Pod) { h.add("ADD", p) }
func (h *recordingHandler) HandlePodUpdates(_ context.Context, p []*v1.Pod) {
	for _, pod := range p {
		op := "UPDATE"
		if pod.DeletionTimestamp != nil {
			op = "DELETE"
		}
		h.add(op, []*v1.Pod{pod})
	}
}
func (h *recordingHandler) HandlePodRemoves(_ context.Context, p []*v1.Pod)   { h.add("REMOVE", p) }
func (h *recordingHandler) HandlePodReconcile(_ context.Context, p []*v1.Pod) { h.add("RECONCILE", p) }
func (h *recordingHandler) HandlePodSyncs(context.Context, []*v1.Pod)         {}
func (h *recordingHandler) HandlePodCleanups(context.Context) error           { return nil }

func boundPod(name, node string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
}

func TestSyncLoopAPIServerSourceAsNode(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), ignoreAPIServerWaiters)
	ctx := context.Background()
	const node = "loop-node-1"
	admin := srv.AdminClient()
	nodeClient := srv.NodeClient(node)
	createNode(t, admin, node)
	createNode(t, admin, "loop-node-2")
	ensureDefaultServiceAccount(t, admin, "default")
	mine, err := admin.CoreV1().Pods("default").Create(ctx, boundPod("mine", node), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.CoreV1().Pods("default").Create(ctx, boundPod("theirs", "loop-node-2"), metav1.CreateOptions{})
	require.NoError(t, err)

	// The node identity may only list its own pods.
	_, err = nodeClient.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "unfiltered list: %v", err)

	src, err := syncloop.NewAPIServerSource(syncloop.APIServerSourceConfig{Client: nodeClient, NodeName: node})
	require.NoError(t, err)
	h := &recordingHandler{ops: map[string][]string{}}
	loop, err := syncloop.New(syncloop.Config{Handler: h, Sources: []syncloop.Source{src}})
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- loop.Run(runCtx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()

	require.Eventually(t, func() bool { return len(h.seen("mine")) > 0 }, 20*time.Second, 10*time.Millisecond)
	require.Equal(t, []string{"ADD"}, h.seen("mine"))
	require.Eventually(t, loop.SourcesReady, 5*time.Second, 10*time.Millisecond)

	// A graceful deletion arrives as DELETE; the pod leaves the source
	// (REMOVE) only when the node confirms with a zero-grace delete.
	grace := int64(30)
	require.NoError(t, admin.CoreV1().Pods("default").Delete(ctx, "mine", metav1.DeleteOptions{GracePeriodSeconds: &grace}))
	require.Eventually(t, func() bool { s := h.seen("mine"); return s[len(s)-1] == "DELETE" }, 20*time.Second, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // nothing else should arrive while the grace period runs
	require.Equal(t, []string{"ADD", "DELETE"}, h.seen("mine"))
	uid := types.UID(mine.UID)
	require.NoError(t, nodeClient.CoreV1().Pods("default").Delete(ctx, "mine",
		metav1.DeleteOptions{GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}}))
	require.Eventually(t, func() bool { s := h.seen("mine"); return s[len(s)-1] == "REMOVE" }, 20*time.Second, 10*time.Millisecond)
	require.Empty(t, h.seen("theirs"), "another node's pod never reaches this node")
}

// ensureDefaultServiceAccount creates the "default" ServiceAccount the
// ServiceAccount admission plugin requires (there is no controller manager
// in the harness to create it).
func ensureDefaultServiceAccount(t testing.TB, cs kubernetes.Interface, ns string) {
	_, err := cs.CoreV1().ServiceAccounts(ns).Create(context.Background(),
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// What kube-controller-manager's root CA publisher does in a real
	// cluster: every pod's kube-api-access volume projects this configMap,
	// and the agent does not start a pod without its volumes.
	ca, err := os.ReadFile(srv.KubeletCAFile())
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().ConfigMaps(ns).Create(context.Background(), &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"},
		Data:       map[string]string{"ca.crt": string(ca)},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// ignoreAPIServerWaiters skips the in-process kube-apiserver's own watch
// cache waiters, which outlive a request by up to its timeout: they share
// the test's process but are not the code under test.
var ignoreAPIServerWaiters = goleak.IgnoreTopFunction("k8s.io/apiserver/pkg/storage/cacher.(*watchCache).waitUntilFreshAndBlock.func2")
