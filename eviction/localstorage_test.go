package eviction

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func withStorageLimit(s string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: *qty(s)}
	}
}

func withEmptyDir(name, limit string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: qty(limit)}}})
	}
}

func TestLocalStorageViolation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		usage    podUsage
		edit     func(*statsapi.PodStats)
		imageFs  bool
		msg      string
		signal   Signal
		violates bool
	}{
		{name: "container rootfs and logs over its limit", pod: newPod("a", withStorageLimit("5Mi")), usage: podUsage{rootfs: 4 * Mi, logs: 2 * Mi},
			msg: `Container app exceeded its local ephemeral storage limit "5Mi". `, signal: signalEphemeralContainerFsLimit, violates: true},
		{name: "within the limit", pod: newPod("a", withStorageLimit("5Mi")), usage: podUsage{rootfs: 4 * Mi, logs: Mi}},
		{name: "rootfs on a dedicated image filesystem does not count", pod: newPod("a", withStorageLimit("5Mi")), usage: podUsage{rootfs: 40 * Mi, logs: Mi}, imageFs: true},
		{name: "no limit", pod: newPod("a"), usage: podUsage{rootfs: 40 * Gi}},
		{name: "emptyDir over its sizeLimit", pod: newPod("a", withEmptyDir("scratch", "1Mi"), withStorageLimit("1Gi")),
			edit: func(ps *statsapi.PodStats) {
				ps.VolumeStats = []statsapi.VolumeStats{{Name: "scratch", FsStats: statsapi.FsStats{UsedBytes: u64p(2 * Mi)}}}
			},
			msg: `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `, signal: signalEmptyDirFsLimit, violates: true},
		{name: "pod total over the containers' limits", pod: newPod("a", withStorageLimit("5Mi")), usage: podUsage{rootfs: Mi},
			edit: func(ps *statsapi.PodStats) { ps.EphemeralStorage = &statsapi.FsStats{UsedBytes: u64p(6 * Mi)} },
			msg:  "Pod ephemeral local storage usage exceeds the total limit of containers 5Mi. ", signal: signalEphemeralPodFsLimit, violates: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := podStats(tc.pod, tc.usage)
			if tc.edit != nil {
				tc.edit(&ps)
			}
			msg, signal, violates := localStorageViolation(tc.pod, &ps, tc.imageFs)
			require.Equal(t, tc.violates, violates)
			require.Equal(t, tc.msg, msg)
			require.Equal(t, tc.signal, signal)
		})
	}
}

// A pod over its container's ephemeral-storage limit is evicted at once
// without node pressure and without a DisruptionTarget condition, even
// with no thresholds; DisableLocalStorageLimits turns that off.
func TestSynchronizeLocalStorageLimits(t *testing.T) {
	hog, quiet := newPod("hog", withStorageLimit("5Mi")), newPod("quiet", withStorageLimit("5Mi"))
	e := newEnv(t, Config{Thresholds: []Threshold{}}, quiet, hog)
	e.observe(nil, podStats(quiet, podUsage{rootfs: Mi}), podStats(hog, podUsage{rootfs: 10 * Mi}))
	res, err := e.m.Synchronize(context.Background())
	require.NoError(t, err)
	require.Equal(t, "hog", res.Evicted.Name)
	require.Equal(t, int64(1), res.GracePeriodSeconds)
	require.Equal(t, v1.ResourceEphemeralStorage, res.Resource)
	k := e.host.kills()
	require.Len(t, k, 1)
	require.Equal(t, v1.PodFailed, k[0].status.Phase)
	require.Equal(t, "Evicted", k[0].status.Reason)
	require.Equal(t, `Container app exceeded its local ephemeral storage limit "5Mi". `, k[0].status.Message)
	require.Empty(t, k[0].status.Conditions)
	require.False(t, e.m.IsUnderDiskPressure())

	off := newEnv(t, Config{Thresholds: []Threshold{}, DisableLocalStorageLimits: true}, hog)
	off.observe(nil, podStats(hog, podUsage{rootfs: 10 * Mi}))
	res, err = off.m.Synchronize(context.Background())
	require.NoError(t, err)
	require.Nil(t, res.Evicted)
	require.Empty(t, off.host.kills())
}
