package prober

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/containerid"
)

// exitError is what cri-client returns for a non-zero exit code.
type exitError int

func (e exitError) Error() string   { return fmt.Sprintf("exit %d", int(e)) }
func (e exitError) ExitStatus() int { return int(e) }

// fakeRunner answers exec probes from a script per command: the exit code
// of cmd[0] (default 0). It counts calls per command.
type fakeRunner struct {
	mu    sync.Mutex
	exit  map[string]int
	calls map[string]int
}

func newFakeRunner() *fakeRunner {
	return &fakeRunner{exit: map[string]int{}, calls: map[string]int{}}
}

func (f *fakeRunner) ExecSync(_ context.Context, _ string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[cmd[0]]++
	if code := f.exit[cmd[0]]; code != 0 {
		return []byte(cmd[0] + " failed"), nil, exitError(code)
	}
	return []byte("ok"), nil, nil
}

func (f *fakeRunner) set(cmd string, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.exit[cmd] = code
}

func (f *fakeRunner) count(cmd string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[cmd]
}

// execProbe is a probe running command cmd.
func execProbe(cmd string, mod ...func(*v1.Probe)) *v1.Probe {
	p := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{cmd}}}}
	for _, f := range mod {
		f(p)
	}
	return p
}

// testPod is a pod with one container "app" carrying the given probes.
func testPod(uid string, liveness, readiness, startup *v1.Probe) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-" + uid, Namespace: "ns", UID: types.UID(uid)},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "app", LivenessProbe: liveness, ReadinessProbe: readiness, StartupProbe: startup,
		}}},
	}
}

// runningStatus is a status where container "app" runs as id since
// startedAt.
func runningStatus(id string, startedAt time.Time) *v1.PodStatus {
	return &v1.PodStatus{
		Phase: v1.PodRunning,
		PodIP: "127.0.0.1",
		ContainerStatuses: []v1.ContainerStatus{{
			Name: "app", ContainerID: id,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(startedAt)}},
		}},
	}
}

// env is a Manager on a fake clock with a fake runner; first runs are at
// AddPod time (Rand returns 0).
type env struct {
	m      *Manager
	clock  *clocktesting.FakeClock
	runner *fakeRunner
	ctx    context.Context
}

func newEnv(t testing.TB, mod ...func(*Config)) *env {
	t.Helper()
	fc := clocktesting.NewFakeClock(epoch)
	r := newFakeRunner()
	cfg := Config{Clock: fc, Runner: r, Rand: func() float64 { return 0 }}
	for _, f := range mod {
		f(&cfg)
	}
	m, err := New(cfg)
	require.NoError(t, err)
	return &env{m: m, clock: fc, runner: r, ctx: context.Background()}
}

// step advances the clock and runs what is due.
func (e *env) step(d time.Duration) int {
	e.clock.Step(d)
	return e.m.RunOnce(e.ctx)
}

func (e *env) result(t ProbeType, id string) string {
	cid, err := containerid.Parse(id)
	if err != nil {
		return "bad id"
	}
	r, ok := e.m.Result(t, cid)
	if !ok {
		return "none"
	}
	return r.String()
}

// results renders the cached results of id as "L=… R=… S=…".
func (e *env) results(id string) string {
	return strings.Join([]string{"L=" + e.result(Liveness, id), "R=" + e.result(Readiness, id), "S=" + e.result(Startup, id)}, " ")
}
