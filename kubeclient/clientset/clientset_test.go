package clientset_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/watchlist"

	"github.com/nodekit/nodekit/kubeclient/clientset"
)

func TestWrapReachesEveryResource(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}})
	c := clientset.Wrap(cs)

	pod, err := c.Pods("ns").Get(ctx, "p", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "p", pod.Name)
	_, err = c.Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
	require.NoError(t, err, "the Node was written through the wrapped clientset")
	_, err = c.Leases("kube-node-lease").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoordinationV1().Leases("kube-node-lease").Get(ctx, "n", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, c.TokenReviews())
	require.NotNil(t, c.SubjectAccessReviews())
}

func TestWrapPassesOnWatchListSupport(t *testing.T) {
	cs := fake.NewClientset()
	require.Equal(t, watchlist.DoesClientNotSupportWatchListSemantics(cs),
		watchlist.DoesClientNotSupportWatchListSemantics(clientset.Wrap(cs)))
	require.True(t, watchlist.DoesClientNotSupportWatchListSemantics(clientset.Wrap(cs)), "client-go's fake does not stream watch lists")
}

// A host that already has a client-go clientset (here the fake) hands it
// to the blocks through Wrap.
func ExampleWrap() {
	client := clientset.Wrap(fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "6f1c"}}))
	node, err := client.Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
	fmt.Println(node.UID, err)
	// Output: 6f1c <nil>
}
