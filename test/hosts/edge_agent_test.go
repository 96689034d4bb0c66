package hosts_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/lease"
	"github.com/nodekit/nodekit/nodestatus"
	"github.com/nodekit/nodekit/prober"
	"github.com/nodekit/nodekit/prober/probertest"
)

// probeResult is one update the prober sent to its Sink, with the
// simulated time it was seen at.
type probeResult struct {
	probe  prober.ProbeType
	result prober.Result
	id     containerid.ID
	at     time.Duration
}

// TestEdgeAgent is an edge agent: node status, lease and probes of one pod,
// against a fake API server, for one simulated minute.
func TestEdgeAgent(t *testing.T) {
	defer goleak.VerifyNone(t)
	const node = "edge-1"
	clk := clocktesting.NewFakeClock(t0)
	api := newAPIServer(clk)
	health := &healthSwitch{}

	// The application's readiness endpoint, on loopback.
	var readyGets atomic.Int32
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		readyGets.Add(1)
		if r.URL.Path != "/ready" {
			http.NotFound(w, r)
		}
	}))
	defer app.Close()
	_, p, err := net.SplitHostPort(app.Listener.Addr().String())
	require.NoError(t, err)
	port, err := strconv.Atoi(p)
	require.NoError(t, err)

	// Blocks.
	leases, err := lease.New(lease.Config{
		Client:   clientset.Wrap(api),
		NodeName: node,
		Clock:    clk,
		Rand:     func() float64 { return 0 }, // the start of the jitter window: every 10s
	})
	require.NoError(t, err)
	status, err := nodestatus.New(nodestatus.Config{
		Client:       clientset.Wrap(api),
		NodeName:     node,
		Labels:       map[string]string{"node-role.example.com/edge": ""},
		Setters:      nodeSetters(t, health.Err),
		Clock:        clk,
		OnRegistered: func(n *v1.Node) { leases.SetNodeUID(n.Name, n.UID) },
	})
	require.NoError(t, err)
	runner := &probertest.Runner{} // the runtime's exec: "/bin/check" exits 0 until scripted
	rec := &probertest.Recorder{}
	probes, err := prober.New(prober.Config{
		Runner: runner,
		Sink:   rec.Sink,
		Clock:  clk,
		Rand:   func() float64 { return 0 }, // first probes at once
	})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waits := []func(){
		runBlock(t, ctx, "nodestatus", status.Run),
		runBlock(t, ctx, "lease", leases.Run),
	}

	// The pod, as the agent's runtime started it.
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name:  "app",
			Image: "registry.example.com/web:1",
			LivenessProbe: &v1.Probe{
				ProbeHandler:   v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"/bin/check"}}},
				PeriodSeconds:  10,
				TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
			},
			ReadinessProbe: &v1.Probe{
				ProbeHandler:   v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(int32(port))}},
				PeriodSeconds:  5,
				TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
			},
		}}},
	}
	podStatus := func() *v1.PodStatus {
		return &v1.PodStatus{Phase: v1.PodRunning, PodIP: "127.0.0.1", ContainerStatuses: []v1.ContainerStatus{{
			Name: "app", ContainerID: "fake://c1",
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}},
		}}}
	}
	require.NoError(t, probes.AddPod(pod))
	st := podStatus()
	probes.UpdatePodStatus(ctx, pod, st)
	require.True(t, *st.ContainerStatuses[0].Started)
	require.False(t, st.ContainerStatuses[0].Ready)
	// The prober runs once the pod and its first status are in: a liveness
	// probe that comes due between AddPod and the first UpdatePodStatus
	// finds no status and waits a whole period (seen 1 in ~100 runs when
	// Run was started first).
	waits = append(waits, runBlock(t, ctx, "prober", probes.Run))
	var execAt, resultAt stamps
	d := &driver{t: t, clk: clk, accessors: []accessor{
		{"nodestatus", status.NextWake}, {"lease", leases.NextWake}, {"prober", probes.NextWake},
	}, onStep: func(now time.Time) {
		execAt.see(len(runner.Calls()), now)
		resultAt.see(rec.Len(), now)
	}}

	runtimeDown := errors.New("container runtime is down")
	d.runUntil(time.Minute,
		action{20 * time.Second, func() { health.Set(runtimeDown); status.Trigger() }},
		action{25 * time.Second, func() { health.Set(nil); status.Trigger() }},
		action{25 * time.Second, func() { runner.SetExit("/bin/check", 1) }},
	)

	// The pod status the agent computes now says the container is ready.
	st = podStatus()
	probes.UpdatePodStatus(ctx, pod, st)
	require.True(t, st.ContainerStatuses[0].Ready)

	cancel()
	for _, wait := range waits {
		wait()
	}
	t.Logf("clock steps: %d, polls with an unarmed timer: %d", d.steps, d.unarmed)

	// Node: Ready, NotReady while the runtime was down, Ready again.
	n := getNode(t, api, node)
	require.Equal(t, v1.ConditionTrue, nodeReady(n))
	require.Equal(t, "8Gi", n.Status.Capacity.Memory().String())
	require.Equal(t, []time.Duration{20 * time.Second, 25 * time.Second}, times(api.requests("patch", "nodes", "status")))

	// Lease: renewed every 10s, owned by the Node from the first renewal
	// that follows registration.
	var renewals []apiCall
	renewals = append(renewals, api.requests("create", "leases", "")...)
	renewals = append(renewals, api.requests("update", "leases", "")...)
	require.Equal(t, []time.Duration{0, 10 * time.Second, 20 * time.Second, 30 * time.Second, 40 * time.Second, 50 * time.Second, 60 * time.Second}, times(renewals))
	for _, r := range renewals[1:] {
		require.Equal(t, nodeOwner(node), r.obj.(*coordinationv1.Lease).OwnerReferences, "lease at %v", r.at)
	}

	// Probes: exec liveness every 10s; it failed from 30s on and turned
	// Failure at the third failure (50s), then held.
	c1 := containerid.ID{Type: "fake", ID: "c1"}
	calls := runner.Calls()
	require.Len(t, execAt, len(calls), "every exec happened before the last park")
	require.Equal(t, []time.Duration{0, 10 * time.Second, 20 * time.Second, 30 * time.Second, 40 * time.Second, 50 * time.Second}, []time.Duration(execAt))
	for _, c := range calls {
		require.Equal(t, probertest.Call{ContainerID: "c1", Cmd: []string{"/bin/check"}, Timeout: time.Second}, c)
	}
	updates := rec.Updates()
	require.Len(t, resultAt, len(updates), "every result came before the last park")
	results := func(probe prober.ProbeType) []probeResult {
		var out []probeResult
		for i, u := range updates {
			if u.Type == probe {
				require.Equal(t, pod.UID, u.PodUID)
				out = append(out, probeResult{u.Type, u.Result, u.ContainerID, resultAt[i]})
			}
		}
		return out
	}
	require.Equal(t, []probeResult{
		{prober.Liveness, prober.Success, c1, 0},
		{prober.Liveness, prober.Failure, c1, 50 * time.Second},
	}, results(prober.Liveness))
	res, ok := probes.Result(prober.Liveness, c1)
	require.True(t, ok)
	require.Equal(t, prober.Failure, res)
	// HTTP readiness: every 5s (0s to 60s), the initial Failure of a new
	// container, then Success at the first probe.
	require.Equal(t, int32(13), readyGets.Load())
	require.Equal(t, []probeResult{
		{prober.Readiness, prober.Failure, c1, 0},
		{prober.Readiness, prober.Success, c1, 0},
	}, results(prober.Readiness))
}

func nodeOwner(node string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: k8stypes.UID("uid-of-" + node)}}
}
