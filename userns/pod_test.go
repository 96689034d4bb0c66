package userns

import (
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// From upstream's TestGetOrCreateUserNamespaceMappings (and, with the gate
// locked on, its ...Disabled rows), with the API validation rows.
func TestPodUserNamespace(t *testing.T) {
	with := func(f func(p *v1.Pod)) *v1.Pod {
		p := userPod("pod")
		f(p)
		return p
	}
	pod := func(hostUsers *bool) *v1.Pod { return with(func(p *v1.Pod) { p.Spec.HostUsers = hostUsers }) }
	cases := []struct {
		name           string
		pod            *v1.Pod
		runtimeHandler string
		supported      bool
		allowHostNet   bool
		wantMode       runtimeapi.NamespaceMode
		wantErr        string
		wantIs         error
	}{
		{name: "nil pod", pod: nil, wantMode: runtimeapi.NamespaceMode_NODE},
		{name: "no user namespace", pod: &v1.Pod{}, wantMode: runtimeapi.NamespaceMode_NODE},
		{name: "hostUsers nil", pod: pod(nil), wantMode: runtimeapi.NamespaceMode_NODE},
		{name: "opt-in to host user namespace", pod: pod(ptr.To(true)), wantMode: runtimeapi.NamespaceMode_NODE},
		{name: "host namespace needs no runtime support", pod: pod(ptr.To(true)), runtimeHandler: "runc",
			wantMode: runtimeapi.NamespaceMode_NODE},
		{name: "user namespace", pod: pod(ptr.To(false)), supported: true, wantMode: runtimeapi.NamespaceMode_POD},
		{name: "user namespace, named handler", pod: pod(ptr.To(false)), runtimeHandler: "kata", supported: true,
			wantMode: runtimeapi.NamespaceMode_POD},
		{name: "user namespace, but no runtime support", pod: pod(ptr.To(false)),
			wantErr: "can't set `spec.hostUsers: false`, runtime does not support user namespaces",
			wantIs:  ErrRuntimeUnsupported},
		{name: "user namespace, but the handler has no support", pod: pod(ptr.To(false)), runtimeHandler: "kata",
			wantErr: "can't set `spec.hostUsers: false`, RuntimeClass handler \"kata\" does not support user namespaces",
			wantIs:  ErrRuntimeUnsupported},
		{name: "host network", supported: true, pod: with(func(p *v1.Pod) { p.Spec.HostNetwork = true }),
			wantErr: "spec.hostNetwork: Forbidden: when `hostUsers` is false", wantIs: ErrForbidden},
		{name: "host network allowed", supported: true, allowHostNet: true,
			pod: with(func(p *v1.Pod) { p.Spec.HostNetwork = true }), wantMode: runtimeapi.NamespaceMode_POD},
		{name: "host PID", supported: true, pod: with(func(p *v1.Pod) { p.Spec.HostPID = true }),
			wantErr: "spec.HostPID: Forbidden: when `hostUsers` is false", wantIs: ErrForbidden},
		{name: "host IPC, before the runtime check", pod: with(func(p *v1.Pod) { p.Spec.HostIPC = true }),
			wantErr: "spec.HostIPC: Forbidden: when `hostUsers` is false", wantIs: ErrForbidden},
		{name: "volume devices", supported: true, pod: with(func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "i"}}
			p.Spec.Containers = []v1.Container{{Name: "a"}, {Name: "b", VolumeDevices: []v1.VolumeDevice{{Name: "d", DevicePath: "/dev/x"}}}}
		}), wantErr: "spec.containers[1].volumeDevices: Forbidden: when `hostUsers` is false", wantIs: ErrForbidden},
		{name: "several", supported: true, pod: with(func(p *v1.Pod) {
			p.Spec.HostNetwork, p.Spec.HostPID = true, true
			p.Spec.InitContainers = []v1.Container{{Name: "i", VolumeDevices: []v1.VolumeDevice{{Name: "d", DevicePath: "/dev/x"}}}}
		}), wantErr: "[spec.hostNetwork: Forbidden: when `hostUsers` is false, spec.HostPID: Forbidden: when `hostUsers` is false, " +
			"spec.initContainers[0].volumeDevices: Forbidden: when `hostUsers` is false]", wantIs: ErrForbidden},
		{name: "host namespaces with hostUsers true", pod: with(func(p *v1.Pod) {
			p.Spec.HostUsers = ptr.To(true)
			p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true
		}), wantMode: runtimeapi.NamespaceMode_NODE},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, root := newTestManager(t, func(c *Config) { c.AllowHostNetwork = tc.allowHostNet })
			ns, err := m.PodUserNamespace(testCtx(t), tc.pod, tc.runtimeHandler, tc.supported)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				require.ErrorIs(t, err, tc.wantIs)
				require.Nil(t, ns)
				require.Empty(t, m.usedBy)
				require.NoDirExists(t, root+"/pods/pod")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantMode, ns.GetMode())
			if tc.wantMode == runtimeapi.NamespaceMode_NODE {
				require.Empty(t, ns.GetUids())
				require.Empty(t, ns.GetGids())
				require.Empty(t, m.usedBy)
				return
			}
			want := []*runtimeapi.IDMapping{{HostId: 65536, ContainerId: 0, Length: 65536}}
			require.Equal(t, want, ns.GetUids())
			require.Equal(t, want, ns.GetGids())
			require.FileExists(t, mappingsPath(root, "pod"))

			// Every call for the pod (sandbox, each container) agrees.
			again, err := m.PodUserNamespace(testCtx(t), tc.pod, tc.runtimeHandler, tc.supported)
			require.NoError(t, err)
			require.Equal(t, ns.GetUids(), again.GetUids())
			require.NotSame(t, ns.Uids[0], again.Uids[0], "each answer is the caller's")
		})
	}
}

func TestValidatePod(t *testing.T) {
	p := userPod("a")
	p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
		Name: "e", VolumeDevices: []v1.VolumeDevice{{Name: "d"}}}}}
	errs := ValidatePod(p, false)
	require.Len(t, errs, 1)
	require.Equal(t, "spec.ephemeralContainers[0].volumeDevices", errs[0].Field)
	require.Empty(t, ValidatePod(nil, false))
	require.Empty(t, ValidatePod(userPod("b"), false))
	require.False(t, UsesUserNamespace(&v1.Pod{}))
	require.True(t, UsesUserNamespace(userPod("c")))
}

// The kubelet's HandlerSupportsUserNamespaces.
func TestHandlerSupportsUserNamespaces(t *testing.T) {
	handlers := []*runtimeapi.RuntimeHandler{
		{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}},
		{Name: "runc", Features: &runtimeapi.RuntimeHandlerFeatures{}},
		{Name: "old"},
	}
	cases := []struct {
		name     string
		handlers []*runtimeapi.RuntimeHandler
		handler  string
		want     bool
		wantErr  string
	}{
		{name: "old runtime reports no handlers", handler: ""},
		{name: "default handler", handlers: handlers, handler: "", want: true},
		{name: "without the feature", handlers: handlers, handler: "runc"},
		{name: "without features", handlers: handlers, handler: "old"},
		{name: "unknown", handlers: handlers, handler: "kata", wantErr: `the handler "kata" is not known`},
	}
	for _, tc := range cases {
		got, err := HandlerSupportsUserNamespaces(tc.handlers, tc.handler)
		if tc.wantErr != "" {
			require.EqualError(t, err, tc.wantErr, tc.name)
		} else {
			require.NoError(t, err, tc.name)
		}
		require.Equal(t, tc.want, got, tc.name)
	}
}

// The kubelet's applyPlatformSpecificContainerConfig for mounts.
func TestMapMounts(t *testing.T) {
	old := []*runtimeapi.IDMapping{{HostId: 1, Length: 1}}
	mounts := []*runtimeapi.Mount{{ContainerPath: "/a", UidMappings: old, GidMappings: old}, {ContainerPath: "/b"}}

	MapMounts(mounts, nil)
	require.Equal(t, old, mounts[0].UidMappings, "nil leaves them")

	pod := userNamespace(65536, 65536)
	MapMounts(mounts, pod)
	for _, m := range mounts {
		require.Equal(t, pod.Uids, m.UidMappings)
		require.Equal(t, pod.Gids, m.GidMappings)
	}

	MapMounts(mounts, &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE})
	for _, m := range mounts {
		require.Empty(t, m.UidMappings)
		require.Empty(t, m.GidMappings)
	}
}
