package integration

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/kubetypes"
)

// TestReferenceAgentMirrorFollowsManifest: a static pod's mirror pod in the
// API follows its manifest, as the kubelet's does. An edit makes a new
// static pod (a new config hash); its old mirror is deleted and a new one
// made. A removed manifest's mirror is deleted once the pod stopped, also
// across an agent restart.
func TestReferenceAgentMirrorFollowsManifest(t *testing.T) {
	const node = "mirror-node"
	admin := srv.AdminClient()
	manifests := t.TempDir()
	write := func(image string) {
		require.NoError(t, os.WriteFile(filepath.Join(manifests, "static.yaml"), []byte(
			"apiVersion: v1\nkind: Pod\nmetadata: {name: etcd, namespace: default}\nspec:\n  containers: [{name: c, image: "+image+"}]\n"), 0o644))
	}
	eventually := func(msg string, f func() bool) {
		t.Helper()
		require.Eventually(t, f, 60*time.Second, 50*time.Millisecond, msg)
	}
	mirror := func() *v1.Pod { return getPod(t, admin, "etcd-"+node) }
	write("busybox:1.36")
	sim := crisim.New(crisim.Config{})
	stop := runAgent(t, node, sim, manifests)

	var first *v1.Pod
	eventually("the mirror pod appears", func() bool {
		first = mirror()
		return first != nil && first.Status.Phase == v1.PodRunning
	})
	require.Equal(t, "busybox:1.36", first.Spec.Containers[0].Image)
	hash := first.Annotations[kubetypes.ConfigMirrorAnnotationKey]
	require.NotEmpty(t, hash)

	write("busybox:1.37")
	eventually("the mirror pod follows the edit", func() bool {
		p := mirror()
		return p != nil && p.UID != first.UID && p.Spec.Containers[0].Image == "busybox:1.37" &&
			p.Annotations[kubetypes.ConfigMirrorAnnotationKey] != hash && p.Status.Phase == v1.PodRunning
	})

	require.NoError(t, os.Remove(filepath.Join(manifests, "static.yaml")))
	eventually("the mirror pod of a removed manifest is deleted", func() bool { return mirror() == nil })

	// A mirror left behind by an agent that stopped before its manifest
	// went is deleted by the next agent.
	write("busybox:1.36")
	eventually("the mirror pod is back", func() bool { p := mirror(); return p != nil && p.Status.Phase == v1.PodRunning })
	stop()
	require.NoError(t, os.Remove(filepath.Join(manifests, "static.yaml")))
	require.NotNil(t, mirror())
	stop = runAgent(t, node, crisim.New(crisim.Config{}), manifests)
	defer stop()
	eventually("the restarted agent deletes the orphaned mirror", func() bool { return mirror() == nil })
}
