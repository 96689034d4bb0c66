package podsyncer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// TestResolveRecursiveReadOnly has the rows of upstream's
// TestResolveRecursiveReadOnly (pkg/kubelet/kubelet_pods_test.go).
func TestResolveRecursiveReadOnly(t *testing.T) {
	rro := func(name string, ro bool, mode v1.RecursiveReadOnlyMode, prop v1.MountPropagationMode) v1.VolumeMount {
		m := v1.VolumeMount{Name: name, ReadOnly: ro}
		if mode != "" {
			m.RecursiveReadOnly = ptr.To(mode)
		}
		if prop != "" {
			m.MountPropagation = ptr.To(prop)
		}
		return m
	}
	const (
		ifPossible, enabled, disabled = v1.RecursiveReadOnlyIfPossible, v1.RecursiveReadOnlyEnabled, v1.RecursiveReadOnlyDisabled
		none, h2c, bidi               = v1.MountPropagationNone, v1.MountPropagationHostToContainer, v1.MountPropagationBidirectional
	)
	for _, tc := range []struct {
		m         v1.VolumeMount
		supported bool
		want      bool
		err       string
	}{
		{m: rro("rw", false, "", ""), supported: true},
		{m: rro("ro", true, "", ""), supported: true},
		{m: rro("ro", true, disabled, ""), supported: true},
		{m: rro("rro-if-possible", true, ifPossible, ""), supported: true, want: true},
		{m: rro("rro-if-possible", true, ifPossible, none), supported: true, want: true},
		{m: rro("rro-if-possible", true, ifPossible, h2c), supported: true, err: "not compatible with propagation"},
		{m: rro("rro-if-possible", true, ifPossible, bidi), supported: true, err: "not compatible with propagation"},
		{m: rro("rro-if-possible", false, ifPossible, ""), supported: true, err: "not read-only"},
		{m: rro("rro-if-possible", false, ifPossible, ""), supported: false, err: "not read-only"},
		{m: rro("rro", true, enabled, ""), supported: true, want: true},
		{m: rro("rro", true, enabled, none), supported: true, want: true},
		{m: rro("rro", true, enabled, h2c), supported: true, err: "not compatible with propagation"},
		{m: rro("rro", true, enabled, bidi), supported: true, err: "not compatible with propagation"},
		{m: rro("rro", false, enabled, ""), supported: true, err: "not read-only"},
		{m: rro("rro", true, enabled, ""), supported: false, err: "not supported by the runtime"},
		{m: rro("invalid", true, "foo", ""), supported: true, err: "unknown recursive read-only mode"},
		// Not an upstream row: IfPossible without support is plain.
		{m: rro("rro-if-possible", true, ifPossible, ""), supported: false},
	} {
		got, err := resolveRecursiveReadOnly(tc.m, tc.supported)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, "%+v supported=%v", tc.m, tc.supported)
			continue
		}
		assert.NoError(t, err, "%+v", tc.m)
		assert.Equal(t, tc.want, got, "%+v supported=%v", tc.m, tc.supported)
	}
}

// TestVolumeMountStatuses follows upstream's mount_rro e2e spec: with a
// supporting runtime the recursive mounts report Enabled, plain read-only
// ones Disabled, read-write ones nothing; without, every read-only mount
// reports Disabled.
func TestVolumeMountStatuses(t *testing.T) {
	c := &v1.Container{Name: "test", VolumeMounts: []v1.VolumeMount{
		{Name: "mnt", MountPath: "/mnt-rro", ReadOnly: true, RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyEnabled)},
		{Name: "mnt", MountPath: "/mnt-rro-if-possible", ReadOnly: true, RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyIfPossible)},
		{Name: "mnt", MountPath: "/mnt-rro-disabled", ReadOnly: true, RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyDisabled)},
		{Name: "mnt", MountPath: "/mnt-ro", ReadOnly: true},
		{Name: "mnt", MountPath: "/mnt-rw"},
	}}
	mode := func(s v1.VolumeMountStatus) string {
		if s.RecursiveReadOnly == nil {
			return "<nil>"
		}
		return string(*s.RecursiveReadOnly)
	}
	modes := func(ss []v1.VolumeMountStatus) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.MountPath+"="+mode(s))
		}
		return out
	}
	assert.Equal(t, []string{"/mnt-rro=Enabled", "/mnt-rro-if-possible=Enabled", "/mnt-rro-disabled=Disabled", "/mnt-ro=Disabled", "/mnt-rw=<nil>"},
		modes(volumeMountStatuses(c, true)))
	assert.Equal(t, []string{"/mnt-rro=Disabled", "/mnt-rro-if-possible=Disabled", "/mnt-rro-disabled=Disabled", "/mnt-ro=Disabled", "/mnt-rw=<nil>"},
		modes(volumeMountStatuses(c, false)))
	st := volumeMountStatuses(c, true)
	assert.Equal(t, v1.VolumeMountStatus{Name: "mnt", MountPath: "/mnt-rw"}, st[4])
	assert.True(t, st[0].ReadOnly)
	assert.Nil(t, volumeMountStatuses(&v1.Container{Name: "none"}, true))
}

func TestApplyRecursiveReadOnly(t *testing.T) {
	c := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{
		{Name: "a", MountPath: "/a", ReadOnly: true, RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyIfPossible)},
		{Name: "b", MountPath: "/b", ReadOnly: true}}}
	mounts := func() []*runtimeapi.Mount { return []*runtimeapi.Mount{{ContainerPath: "/a"}, {ContainerPath: "/b"}} }
	m := mounts()
	require.NoError(t, applyRecursiveReadOnly(c, m, true))
	assert.True(t, m[0].RecursiveReadOnly)
	assert.False(t, m[1].RecursiveReadOnly)
	m = mounts()
	require.NoError(t, applyRecursiveReadOnly(c, m, false))
	assert.False(t, m[0].RecursiveReadOnly, "IfPossible without support is plain read-only")

	c.VolumeMounts[0].RecursiveReadOnly = ptr.To(v1.RecursiveReadOnlyEnabled)
	err := applyRecursiveReadOnly(c, mounts(), false)
	assert.EqualError(t, err, `failed to resolve recursive read-only mode: volume "a" requested recursive read-only mode, but it is not supported by the runtime`,
		"the message upstream's e2e spec looks for")
	assert.Error(t, applyRecursiveReadOnly(c, mounts()[:1], true), "a Volumes that returns a mount per volumeMount is required")
}

func TestSortPodIPs(t *testing.T) {
	for _, tc := range []struct {
		ips, host, want []string
	}{
		{ips: nil, host: []string{"192.0.2.1"}, want: nil},
		{ips: []string{"10.0.0.5"}, host: nil, want: []string{"10.0.0.5"}},
		{ips: []string{"fd00::5", "10.0.0.5"}, host: []string{"192.0.2.1"}, want: []string{"10.0.0.5", "fd00::5"}},
		{ips: []string{"10.0.0.5", "fd00::5"}, host: []string{"2001:db8::1"}, want: []string{"fd00::5", "10.0.0.5"}},
		{ips: []string{"10.0.0.5", "10.0.0.6", "fd00::5", "fd00::6"}, host: []string{"192.0.2.1"}, want: []string{"10.0.0.5", "fd00::5"}},
		{ips: []string{"fd00::5"}, host: []string{"192.0.2.1"}, want: []string{"fd00::5"}},
		{ips: []string{"not-an-ip", "10.0.0.5"}, host: nil, want: []string{"10.0.0.5"}},
	} {
		assert.Equal(t, tc.want, sortPodIPs(tc.ips, tc.host), "%v on %v", tc.ips, tc.host)
	}
}
