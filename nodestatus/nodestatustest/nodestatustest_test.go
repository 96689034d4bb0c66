package nodestatustest_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit/nodekit/nodestatus"
	"github.com/nodekit/nodekit/nodestatus/nodestatustest"
)

// The fake has the real controller's accessor.
var _ interface{ Node() *v1.Node } = (*nodestatus.Controller)(nil)

func TestNode(t *testing.T) {
	var n nodestatustest.Node
	require.Nil(t, n.Node())
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "b"}}}
	n.Set(node)
	node.Labels["a"] = "changed"
	got := n.Node()
	require.Equal(t, "b", got.Labels["a"], "a copy was kept")
	got.Labels["a"] = "mutated"
	require.Equal(t, "b", n.Node().Labels["a"], "and a copy is handed out")
	n.Set(nil)
	require.Nil(t, n.Node())
}

func ExampleNode() {
	var n nodestatustest.Node
	n.Set(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "edge-1"}})
	fmt.Println(n.Node().Name)
	// Output: edge-1
}
