package integration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/test/apiserver"
)

// TestHarnessNodeIdentity proves the harness: acting as system:node:<name>,
// a node agent can register its Node, create and renew its Lease, and patch
// its status, while the Node authorizer and NodeRestriction refuse it
// another node's Lease and status.
func TestHarnessNodeIdentity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const name, other = "harness-node-a", "harness-node-b"
	nodeClient := srv.NodeClient(name)

	// Register the Node as the node itself.
	node, err := nodeClient.CoreV1().Nodes().Create(ctx, &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, node.UID)

	// Create the Lease with an owner reference to the Node, then renew it.
	leases := nodeClient.CoordinationV1().Leases(apiserver.NodeLeaseNamespace)
	now := metav1.NewMicroTime(time.Now().Truncate(time.Microsecond))
	lease, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: apiserver.NodeLeaseNamespace,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: name, UID: node.UID,
			}},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(name),
			LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime:            &now,
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Len(t, lease.OwnerReferences, 1)

	later := metav1.NewMicroTime(now.Add(10 * time.Second))
	lease.Spec.RenewTime = &later
	renewed, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NotEqual(t, lease.ResourceVersion, renewed.ResourceVersion)
	require.True(t, renewed.Spec.RenewTime.Equal(&later))

	// Patch the status subresource with a two-way strategic merge patch.
	updated := node.DeepCopy()
	updated.Status.Conditions = []v1.NodeCondition{{
		Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
	}}
	patch := twoWayPatch(t, node, updated)
	patched, err := nodeClient.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	require.Len(t, patched.Status.Conditions, 1)
	require.Equal(t, v1.ConditionTrue, patched.Status.Conditions[0].Status)

	// Another node's Lease and status are refused.
	_, err = srv.AdminClient().CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: other, Namespace: apiserver.NodeLeaseNamespace},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(other)},
	}, metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "creating another node's lease: %v", err)
	_, err = nodeClient.CoreV1().Nodes().Patch(ctx, other, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	require.True(t, apierrors.IsForbidden(err), "patching another node's status: %v", err)

	// The admin can see what the node wrote.
	got, err := srv.AdminClient().CoordinationV1().Leases(apiserver.NodeLeaseNamespace).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, name, *got.Spec.HolderIdentity)
}

func twoWayPatch(t *testing.T, oldNode, newNode *v1.Node) []byte {
	t.Helper()
	oldJSON, err := json.Marshal(oldNode)
	require.NoError(t, err)
	newJSON, err := json.Marshal(newNode)
	require.NoError(t, err)
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Node{})
	require.NoError(t, err)
	return patch
}
