package pleg

import (
	"testing"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit/nodekit/containerid"
)

func TestTransition(t *testing.T) {
	const uid, id = "uid", "c1"
	started := ev(uid, ContainerStarted, id)
	died := ev(uid, ContainerDied, id)
	removed := ev(uid, ContainerRemoved, id)
	changed := ev(uid, ContainerChanged, id)
	tests := []struct {
		old, cur State
		want     []PodLifecycleEvent
	}{
		{NonExistent, NonExistent, nil},
		{NonExistent, Running, []PodLifecycleEvent{started}},
		{NonExistent, Exited, []PodLifecycleEvent{died}},
		{NonExistent, Unknown, []PodLifecycleEvent{changed}},
		{Running, Running, nil},
		{Running, Exited, []PodLifecycleEvent{died}},
		{Running, Unknown, []PodLifecycleEvent{changed}},
		{Running, NonExistent, []PodLifecycleEvent{died, removed}},
		{Exited, Exited, nil},
		{Exited, Running, []PodLifecycleEvent{started}},
		{Exited, Unknown, []PodLifecycleEvent{changed}},
		{Exited, NonExistent, []PodLifecycleEvent{removed}},
		{Unknown, Unknown, nil},
		{Unknown, Running, []PodLifecycleEvent{started}},
		{Unknown, Exited, []PodLifecycleEvent{died}},
		{Unknown, NonExistent, []PodLifecycleEvent{died, removed}},
	}
	for _, tt := range tests {
		t.Run(tt.old.String()+"→"+tt.cur.String(), func(t *testing.T) {
			require.Equal(t, tt.want, Transition(nil, uid, containerid.ID{ID: id}, tt.old, tt.cur))
		})
	}
}

func TestStates(t *testing.T) {
	require.Equal(t, Unknown, ContainerState(runtimeapi.ContainerState_CONTAINER_CREATED))
	require.Equal(t, Running, ContainerState(runtimeapi.ContainerState_CONTAINER_RUNNING))
	require.Equal(t, Exited, ContainerState(runtimeapi.ContainerState_CONTAINER_EXITED))
	require.Equal(t, Unknown, ContainerState(runtimeapi.ContainerState_CONTAINER_UNKNOWN))
	require.Equal(t, Running, SandboxState(runtimeapi.PodSandboxState_SANDBOX_READY))
	require.Equal(t, Exited, SandboxState(runtimeapi.PodSandboxState_SANDBOX_NOTREADY))
}

func TestDiff(t *testing.T) {
	rec := &podRecord{
		uid: "u",
		old: []entry{{id: "s", state: Running, sandbox: true}, {id: "a", state: Running}, {id: "b", state: Exited}},
		cur: []entry{{id: "s", state: Running, sandbox: true}, {id: "c", state: Running}, {id: "a", state: Exited}},
	}
	require.Equal(t, []PodLifecycleEvent{
		ev("u", ContainerDied, "a"), ev("u", ContainerRemoved, "b"), ev("u", ContainerStarted, "c"),
	}, diff(nil, rec, ""))
}

func TestFinishStatus(t *testing.T) {
	ready := runtimeapi.PodSandboxState_SANDBOX_READY
	notReady := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	sb := func(id string, created int64, state runtimeapi.PodSandboxState, ips ...string) *runtimeapi.PodSandboxStatus {
		s := &runtimeapi.PodSandboxStatus{Id: id, CreatedAt: created, State: state,
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "web-" + id, Namespace: "ns"}}
		if len(ips) > 0 {
			s.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: ips[0]}
			for _, ip := range ips[1:] {
				s.Network.AdditionalIps = append(s.Network.AdditionalIps, &runtimeapi.PodIP{Ip: ip})
			}
		}
		return s
	}
	tests := []struct {
		name      string
		sandboxes []*runtimeapi.PodSandboxStatus
		prevIPs   []string
		wantName  string
		wantIPs   []string
	}{
		{"newest ready sandbox gives IPs", []*runtimeapi.PodSandboxStatus{sb("old", 1, notReady, "10.0.0.1"), sb("new", 2, ready, "10.0.0.2", "fd00::2")}, nil, "web-new", []string{"10.0.0.2", "fd00::2"}},
		{"stopped pod keeps previous IPs", []*runtimeapi.PodSandboxStatus{sb("a", 1, notReady)}, []string{"10.0.0.9"}, "web-a", []string{"10.0.0.9"}},
		{"ready sandbox without IPs does not inherit", []*runtimeapi.PodSandboxStatus{sb("a", 1, ready)}, []string{"10.0.0.9"}, "web-a", nil},
		{"no sandbox keeps previous IPs", nil, []string{"10.0.0.9"}, "", []string{"10.0.0.9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &PodStatus{ID: "u", SandboxStatuses: tt.sandboxes}
			finishStatus(st, tt.prevIPs)
			require.Equal(t, tt.wantName, st.Name)
			require.Equal(t, tt.wantIPs, st.IPs)
			for i := 1; i < len(st.SandboxStatuses); i++ {
				require.GreaterOrEqual(t, st.SandboxStatuses[i-1].CreatedAt, st.SandboxStatuses[i].CreatedAt, "newest first")
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	rt := &hookRuntime{}
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no runtime", Config{}},
		{"negative period", Config{Runtime: rt, RelistPeriod: -1}},
		{"threshold below period", Config{Runtime: rt, RelistPeriod: 5 * 60e9, RelistThreshold: 60e9}},
		{"evented threshold below period", Config{Runtime: rt, EventedRelistThreshold: 1e9}},
		{"negative parallelism", Config{Runtime: rt, StatusParallelism: -1}},
		{"backoff max below initial", Config{Runtime: rt, StreamBackoffInitial: 2e9, StreamBackoffMax: 1e9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			require.ErrorIs(t, err, ErrInvalidConfig)
		})
	}
	g, err := New(Config{Runtime: rt})
	require.NoError(t, err)
	require.Equal(t, DefaultRelistPeriod, g.cfg.RelistPeriod)
	require.Equal(t, DefaultRelistThreshold, g.cfg.RelistThreshold)
	require.Equal(t, DefaultEventChannelCapacity, cap(g.em.out))
	require.Equal(t, DefaultStatusParallelism, g.cfg.StatusParallelism)
}
