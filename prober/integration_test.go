package prober

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/nodekit/nodekit/crisim"
)

// TestManagerExecThroughCRI runs exec liveness probes through the Manager,
// cri-client and the CRI simulator, on one fake clock.
func TestManagerExecThroughCRI(t *testing.T) {
	leakCheck(t)
	ce := newCRIEnv(t)
	ce.sim.ScriptExec(crisim.Match{Container: "app"}, []string{"check"}, crisim.ExecResult{Stderr: "unhealthy", ExitCode: 1})
	rec := record.NewFakeRecorder(10)
	m, err := New(Config{Runner: ce.runner, Clock: ce.clock, Recorder: rec, Rand: func() float64 { return 0 }})
	require.NoError(t, err)
	pod := testPod("web", execProbe("check", func(p *v1.Probe) { p.FailureThreshold = 2 }), execProbe("ready"), nil)
	require.NoError(t, m.AddPod(pod))
	m.UpdatePodStatus(t.Context(), pod, runningStatus(ce.fullID, ce.started))
	e := &env{m: m, clock: ce.clock, ctx: t.Context()}

	require.Equal(t, 2, m.RunOnce(t.Context()))
	require.Equal(t, "L=Success R=Success S=none", e.results(ce.fullID), "one failure is below the threshold")
	require.Equal(t, "Warning Unhealthy Liveness probe failed: unhealthy", <-rec.Events)
	ce.clock.Step(10 * time.Second)
	require.Equal(t, 2, m.RunOnce(t.Context()))
	require.Equal(t, "L=Failure R=Success S=none", e.results(ce.fullID))
}

// TestManagerHTTPAndTCP probes real loopback servers through the Manager.
func TestManagerHTTPAndTCP(t *testing.T) {
	leakCheck(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	_, port := hostPort(t, srv.Listener.Addr().String())
	e := newEnv(t)
	pod := testPod("p",
		&v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/other", Port: intPort(port)}}, FailureThreshold: 1},
		&v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intPort(port)}}, FailureThreshold: 1},
		&v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intPort(port)}}})
	require.NoError(t, e.m.AddPod(pod))
	e.m.UpdatePodStatus(e.ctx, pod, runningStatus(cid, epoch)) // pod IP 127.0.0.1
	e.step(0)
	require.Equal(t, "L=Success R=Failure S=Success", e.results(cid), "initial values, startup probed")
	st := runningStatus(cid, epoch)
	e.m.UpdatePodStatus(e.ctx, pod, st)
	require.True(t, *st.ContainerStatuses[0].Started)
	e.step(10 * time.Second)
	require.Equal(t, "L=Failure R=Success S=Success", e.results(cid))
}
