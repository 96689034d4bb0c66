package volumes

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// TestMetrics scrapes the manager's registry after two syncs of a pod
// whose volumes of several types mount, one fails and one claim is not
// bound, and after its teardown.
func TestMetrics(t *testing.T) {
	ctx := context.Background()
	local := t.TempDir()
	claim := boundClaim("data", "pv-local")
	unbound := boundClaim("later", "")
	unbound.Status.Phase = v1.ClaimPending
	objs := []runtime.Object{
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "ns"}, Data: map[string]string{"k": "v"}},
		claim, pvFor("pv-local", claim, v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: local}}), unbound,
	}
	e := newEnv(t, objs...)
	reg := prometheus.NewPedanticRegistry()
	m, err := New(Config{RootDir: t.TempDir(), Objects: e.objects, Client: e.client, Mounter: e.mounter, Clock: e.clock, Registerer: reg})
	require.NoError(t, err)
	e.m = m
	_, err = New(Config{RootDir: t.TempDir(), Registerer: reg})
	require.ErrorIs(t, err, ErrInvalidConfig, "a second manager on one registry is refused, not a panic")

	pod := testPod(
		v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		v1.Volume{Name: "absent", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}}}},
		v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: filepath.Join(local, "..")}}},
		claimVolume("data", "data", false),
		claimVolume("later", "later", false),
	)
	require.Error(t, e.setUp(ctx, pod))
	require.Error(t, e.setUp(ctx, pod))

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP volume_manager_total_volumes [ALPHA] Number of volumes in Volume Manager
# TYPE volume_manager_total_volumes gauge
volume_manager_total_volumes{plugin_name="kubernetes.io/configmap",state="actual_state_of_world"} 1
volume_manager_total_volumes{plugin_name="kubernetes.io/configmap",state="desired_state_of_world"} 2
volume_manager_total_volumes{plugin_name="kubernetes.io/empty-dir",state="actual_state_of_world"} 1
volume_manager_total_volumes{plugin_name="kubernetes.io/empty-dir",state="desired_state_of_world"} 1
volume_manager_total_volumes{plugin_name="kubernetes.io/host-path",state="actual_state_of_world"} 1
volume_manager_total_volumes{plugin_name="kubernetes.io/host-path",state="desired_state_of_world"} 1
volume_manager_total_volumes{plugin_name="kubernetes.io/local-volume",state="actual_state_of_world"} 1
volume_manager_total_volumes{plugin_name="kubernetes.io/local-volume",state="desired_state_of_world"} 1
`), "volume_manager_total_volumes"))

	// Mount operations: each volume until it is mounted, a configMap on
	// every sync, a claim not bound yet never.
	ops := operations(t, reg)
	require.Equal(t, map[string]uint64{
		"kubernetes.io/configmap volume_mount success false":      2,
		"kubernetes.io/configmap volume_mount fail-unknown false": 2,
		"kubernetes.io/empty-dir volume_mount success false":      1,
		"kubernetes.io/host-path volume_mount success false":      1,
		"kubernetes.io/local-volume volume_mount success false":   1,
	}, ops)

	require.NoError(t, e.m.TearDownPod(ctx, pod.UID))
	n, err := testutil.GatherAndCount(reg, "volume_manager_total_volumes")
	require.NoError(t, err)
	require.Zero(t, n, "a torn down pod's volumes are gone")
}

// TestOrphanSweepMetrics: the orphaned pod directories of the last
// CleanupOrphans, and those it could not remove.
func TestOrphanSweepMetrics(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewPedanticRegistry()
	m, err := New(Config{RootDir: t.TempDir(), Mounter: e.mounter, Clock: e.clock, Registerer: reg})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, m.CleanupOrphans(ctx, func(types.UID) bool { return false }))
	for _, uid := range []types.UID{"gone", "stuck"} {
		require.NoError(t, os.MkdirAll(filepath.Join(m.PodDir(uid), "volumes"), 0o750))
	}
	// A mount this agent did not make keeps its pod directory.
	require.NoError(t, e.mounter.add(filepath.Join(m.PodDir("stuck"), "volumes", "kubernetes.io~nfs", "data"), "nfs"))
	require.Error(t, m.CleanupOrphans(ctx, func(types.UID) bool { return false }))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubelet_orphan_pod_cleaned_volumes [ALPHA] The total number of orphaned Pods whose volumes were cleaned in the last periodic sweep.
# TYPE kubelet_orphan_pod_cleaned_volumes gauge
kubelet_orphan_pod_cleaned_volumes 2
# HELP kubelet_orphan_pod_cleaned_volumes_errors [ALPHA] The number of orphaned Pods whose volumes failed to be cleaned in the last periodic sweep.
# TYPE kubelet_orphan_pod_cleaned_volumes_errors gauge
kubelet_orphan_pod_cleaned_volumes_errors 1
`), "kubelet_orphan_pod_cleaned_volumes", "kubelet_orphan_pod_cleaned_volumes_errors"))
}

// operations returns the sample count of each storage operation series,
// keyed by its label values in order.
func operations(t *testing.T, reg prometheus.Gatherer) map[string]uint64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]uint64{}
	for _, f := range families {
		if f.GetName() != "storage_operation_duration_seconds" {
			continue
		}
		require.Equal(t, "[ALPHA] Storage operation duration", f.GetHelp())
		for _, m := range f.GetMetric() {
			byName := map[string]string{}
			for _, l := range m.GetLabel() {
				byName[l.GetName()] = l.GetValue()
			}
			key := strings.Join([]string{byName["volume_plugin"], byName["operation_name"], byName["status"], byName["migrated"]}, " ")
			out[key] = m.GetHistogram().GetSampleCount()
			require.Len(t, m.GetHistogram().GetBucket(), 13, "upstream's buckets, 100ms to 10m")
		}
	}
	return out
}

func TestPluginMetricNames(t *testing.T) {
	m := &Manager{}
	for _, tc := range []struct {
		p    Plugin
		v    v1.Volume
		want string
	}{
		{emptyDirPlugin{m}, v1.Volume{}, "kubernetes.io/empty-dir"},
		{secretPlugin{m}, v1.Volume{}, "kubernetes.io/secret"},
		{downwardAPIPlugin{m}, v1.Volume{}, "kubernetes.io/downward-api"},
		{projectedPlugin{m}, v1.Volume{}, "kubernetes.io/projected"},
		{imagePlugin{m}, v1.Volume{}, "kubernetes.io/image"},
		{hostPathPlugin{}, v1.Volume{}, "kubernetes.io/host-path"},
		{pvcPlugin{m}, v1.Volume{}, ""},
		{&recordingPlugin{}, v1.Volume{VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "d.example.com"}}}, "kubernetes.io/csi:d.example.com"},
	} {
		require.Equal(t, tc.want, pluginMetricName(tc.p, &tc.v))
	}
	csiPV := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d"}}}}
	require.Equal(t, "kubernetes.io/csi:d", pvPluginName(csiPV, &recordingPlugin{}))
	require.Equal(t, notAvailable, pvPluginName(csiPV, nil))
	names := []string{}
	for _, p := range m.builtins() {
		if remounted(p) {
			names = append(names, p.Name())
		}
	}
	sort.Strings(names)
	require.Equal(t, []string{"kubernetes.io~configmap", "kubernetes.io~downward-api", "kubernetes.io~projected", "kubernetes.io~secret"}, names)
}
