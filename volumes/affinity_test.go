package volumes

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// requiredAffinity selects nodes whose label key has one of values.
func requiredAffinity(key string, op v1.NodeSelectorOperator, values ...string) *v1.VolumeNodeAffinity {
	return &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}}}}
}

func TestMatchNodeAffinity(t *testing.T) {
	labels := map[string]string{"kubernetes.io/hostname": "n1", "topology.kubernetes.io/zone": "z1"}
	byName := func(name string) *v1.VolumeNodeAffinity {
		return &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{name}}}}}}}
	}
	twoTerms := requiredAffinity("kubernetes.io/hostname", v1.NodeSelectorOpIn, "other")
	twoTerms.Required.NodeSelectorTerms = append(twoTerms.Required.NodeSelectorTerms,
		requiredAffinity("topology.kubernetes.io/zone", v1.NodeSelectorOpIn, "z1").Required.NodeSelectorTerms...)
	for _, tc := range []struct {
		name     string
		affinity *v1.VolumeNodeAffinity
		want     string // "" for a match
	}{
		{name: "no affinity"},
		{name: "no required affinity", affinity: &v1.VolumeNodeAffinity{}},
		{name: "hostname matches", affinity: requiredAffinity("kubernetes.io/hostname", v1.NodeSelectorOpIn, "n1")},
		{name: "zone exists", affinity: requiredAffinity("topology.kubernetes.io/zone", v1.NodeSelectorOpExists)},
		{name: "one term of two matches", affinity: twoTerms},
		{name: "another hostname", affinity: requiredAffinity("kubernetes.io/hostname", v1.NodeSelectorOpIn, "other"),
			want: "no matching NodeSelectorTerms"},
		{name: "label missing", affinity: requiredAffinity("example.com/disk", v1.NodeSelectorOpExists),
			want: "no matching NodeSelectorTerms"},
		{name: "node name matches", affinity: byName("n1")},
		{name: "another node name", affinity: byName("n2"), want: "no matching NodeSelectorTerms"},
		{name: "no terms", affinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{}}, want: "no matching NodeSelectorTerms"},
		{name: "invalid operator", affinity: requiredAffinity("kubernetes.io/hostname", "Near", "n1"), want: "Near"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pv := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{NodeAffinity: tc.affinity}}
			err := matchNodeAffinity(pv, "n1", labels)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// recordingPlugin mounts PersistentVolumes with a csi source, recording
// the calls, as volumes/csi would.
type recordingPlugin struct{ calls int }

func (*recordingPlugin) Name() string                 { return "kubernetes.io~csi" }
func (*recordingPlugin) CanSupport(v *v1.Volume) bool { return v.CSI != nil }
func (*recordingPlugin) CanSupportPersistent(pv *v1.PersistentVolume) bool {
	return pv.Spec.CSI != nil
}
func (p *recordingPlugin) SetUp(_ context.Context, v Volume) (Mount, error) {
	p.calls++
	return Mount{HostPath: filepath.Join(v.Dir, "mount")}, nil
}

// Every PersistentVolume with required node affinity is checked against
// the node's labels before it is mounted, whatever its source, with the
// kubelet's message; without the node it is refused; one without
// affinity is mounted either way.
func TestPersistentVolumeNodeAffinity(t *testing.T) {
	ctx := context.Background()
	here := requiredAffinity("kubernetes.io/hostname", v1.NodeSelectorOpIn, "n1")
	there := requiredAffinity("kubernetes.io/hostname", v1.NodeSelectorOpIn, "n2")
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"kubernetes.io/hostname": "n1"}}}
	hostPath := func(dir string) v1.PersistentVolumeSource {
		return v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: dir}}
	}
	csiSource := v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "h"}}
	for _, tc := range []struct {
		name     string
		source   v1.PersistentVolumeSource
		affinity *v1.VolumeNodeAffinity
		node     func() *v1.Node
		want     string // "" for a mount
	}{
		{name: "hostPath elsewhere", source: hostPath(t.TempDir()), affinity: there, node: func() *v1.Node { return node },
			want: `MountVolume.NodeAffinity check failed for volume "pv" : no matching NodeSelectorTerms`},
		{name: "csi elsewhere", source: csiSource, affinity: there, node: func() *v1.Node { return node },
			want: `MountVolume.NodeAffinity check failed for volume "pv" : no matching NodeSelectorTerms`},
		{name: "hostPath here", source: hostPath(t.TempDir()), affinity: here, node: func() *v1.Node { return node }},
		{name: "csi here", source: csiSource, affinity: here, node: func() *v1.Node { return node }},
		{name: "no Config.Node", source: csiSource, affinity: here,
			want: `MountVolume.NodeAffinity check failed for volume "pv" : volumes: the node is not known, so the volume's node affinity cannot be checked`},
		{name: "node not read yet", source: hostPath(t.TempDir()), affinity: here, node: func() *v1.Node { return nil },
			want: `MountVolume.NodeAffinity check failed for volume "pv" : volumes: the node is not known`},
		{name: "hostPath without affinity, no node", source: hostPath(t.TempDir())},
		{name: "csi without affinity, no node", source: csiSource},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claim := boundClaim("c", "pv")
			pv := pvFor("pv", claim, tc.source)
			pv.Spec.NodeAffinity = tc.affinity
			e := newEnv(t, claim, pv)
			plugin := &recordingPlugin{}
			m, err := New(Config{RootDir: t.TempDir(), Client: e.client, Mounter: e.mounter, Recorder: e.recorder,
				Clock: e.clock, Plugins: []Plugin{plugin}, Node: tc.node})
			require.NoError(t, err)
			pod := testPod(claimVolume("data", "c", false))
			pod.UID = types.UID("uid-affinity")
			err = m.SetUpPod(ctx, pod)
			if tc.want == "" {
				require.NoError(t, err)
				mounts, err := m.ContainerMounts(ctx, pod, &pod.Spec.Containers[0], nil)
				require.NoError(t, err)
				require.Len(t, mounts, 1)
				return
			}
			require.ErrorContains(t, err, tc.want)
			var me *MountError
			require.ErrorAs(t, err, &me)
			assert.Contains(t, <-e.recorder.Events, "FailedMount "+tc.want)
			assert.Zero(t, plugin.calls, "nothing mounted")
			_, err = m.ContainerMounts(ctx, pod, &pod.Spec.Containers[0], nil)
			require.ErrorContains(t, err, "not set up")
		})
	}
}
