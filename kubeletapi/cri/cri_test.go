package cri_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	fakeapi "k8s.io/cri-api/pkg/apis/testing"
	"k8s.io/cri-client/pkg/logs"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/kubeletapi/cri"
	"github.com/nodekit/nodekit/kubeletapi/kubeletapitest"
)

const (
	podNS   = "ns"
	podName = "p"
	podUID  = "uid-1"
)

func TestNew(t *testing.T) {
	_, err := cri.New(cri.Config{})
	require.ErrorIs(t, err, cri.ErrInvalidConfig)
	require.ErrorContains(t, err, "Runtime is required")
	_, err = cri.New(cri.Config{Runtime: fakeapi.NewFakeRuntimeService(), RunTimeout: -time.Second})
	require.ErrorIs(t, err, cri.ErrInvalidConfig)
	require.ErrorContains(t, err, "RunTimeout -1s must not be negative")
	r, err := cri.New(cri.Config{Runtime: fakeapi.NewFakeRuntimeService()})
	require.NoError(t, err)
	require.NotNil(t, r)
}

// podWith returns ns/p whose container c has status st (none if nil).
func podWith(st *v1.ContainerStatus) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: podNS, Name: podName, UID: podUID},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c"}}},
	}
	if st != nil {
		st.Name = "c"
		pod.Status.ContainerStatuses = []v1.ContainerStatus{*st}
	}
	return pod
}

func terminated(id string) *v1.ContainerStateTerminated {
	return &v1.ContainerStateTerminated{ContainerID: id, ExitCode: 1}
}

func TestContainerIDForLogs(t *testing.T) {
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	waiting := func(reason string) v1.ContainerState {
		return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}
	}
	tests := []struct {
		name     string
		status   *v1.ContainerStatus
		previous bool
		want     string
		wantErr  string
	}{
		{"no status", nil, false, "", `container "c" in pod "p" is not available`},
		{"no status, previous", nil, true, "", `container "c" in pod "p" is not available`},
		{"previous without lastState", &v1.ContainerStatus{ContainerID: "containerd://cur", State: running}, true, "",
			`previous terminated container "c" in pod "p" not found`},
		{"previous with an empty lastState ID", &v1.ContainerStatus{State: running,
			LastTerminationState: v1.ContainerState{Terminated: terminated("")}}, true, "",
			`previous terminated container "c" in pod "p" not found`},
		{"previous", &v1.ContainerStatus{ContainerID: "containerd://cur", State: running,
			LastTerminationState: v1.ContainerState{Terminated: terminated("containerd://prev")}}, true, "prev", ""},
		{"running", &v1.ContainerStatus{ContainerID: "containerd://cur", State: running,
			LastTerminationState: v1.ContainerState{Terminated: terminated("containerd://prev")}}, false, "cur", ""},
		{"running, ID without scheme", &v1.ContainerStatus{ContainerID: "cur", State: running}, false, "cur", ""},
		{"terminated", &v1.ContainerStatus{State: v1.ContainerState{Terminated: terminated("cri-o://done")},
			LastTerminationState: v1.ContainerState{Terminated: terminated("cri-o://prev")}}, false, "done", ""},
		{"terminated with an empty ID falls back to lastState", &v1.ContainerStatus{State: v1.ContainerState{Terminated: terminated("")},
			LastTerminationState: v1.ContainerState{Terminated: terminated("cri-o://prev")}}, false, "prev", ""},
		{"terminated with an empty ID and no lastState", &v1.ContainerStatus{State: v1.ContainerState{Terminated: terminated("")}}, false, "",
			`container "c" in pod "p" is terminated`},
		{"terminated with empty IDs", &v1.ContainerStatus{State: v1.ContainerState{Terminated: terminated("")},
			LastTerminationState: v1.ContainerState{Terminated: terminated("")}}, false, "",
			`container "c" in pod "p" is terminated`},
		{"waiting after a termination", &v1.ContainerStatus{State: waiting("CrashLoopBackOff"),
			LastTerminationState: v1.ContainerState{Terminated: terminated("containerd://prev")}}, false, "prev", ""},
		{"waiting after a termination without ID", &v1.ContainerStatus{State: waiting("CrashLoopBackOff"),
			LastTerminationState: v1.ContainerState{Terminated: terminated("")}}, false, "",
			`container "c" in pod "p" is terminated`},
		{"ErrImagePull", &v1.ContainerStatus{State: waiting("ErrImagePull")}, false, "",
			`container "c" in pod "p" is waiting to start: image can't be pulled`},
		{"ImagePullBackOff", &v1.ContainerStatus{State: waiting("ImagePullBackOff")}, false, "",
			`container "c" in pod "p" is waiting to start: trying and failing to pull image`},
		{"ContainerCreating", &v1.ContainerStatus{State: waiting("ContainerCreating")}, false, "",
			`container "c" in pod "p" is waiting to start: ContainerCreating`},
		{"waiting without reason", &v1.ContainerStatus{State: waiting("")}, false, "",
			`container "c" in pod "p" is waiting to start: `},
		{"no state", &v1.ContainerStatus{}, false, "",
			`container "c" in pod "p" is waiting to start - no logs yet`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cri.ContainerIDForLogs(podWith(tt.status), "c", tt.previous)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				require.Empty(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestContainerIDForLogsInitAndEphemeral(t *testing.T) {
	pod := podWith(nil)
	pod.Status.InitContainerStatuses = []v1.ContainerStatus{{Name: "init", ContainerID: "containerd://i",
		State: v1.ContainerState{Terminated: terminated("containerd://i")}}}
	pod.Status.EphemeralContainerStatuses = []v1.ContainerStatus{{Name: "debug", ContainerID: "containerd://d",
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
	id, err := cri.ContainerIDForLogs(pod, "init", false)
	require.NoError(t, err)
	require.Equal(t, "i", id)
	id, err = cri.ContainerIDForLogs(pod, "debug", false)
	require.NoError(t, err)
	require.Equal(t, "d", id)
}

func TestLogOptions(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	since := metav1.NewTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	tests := []struct {
		name string
		in   v1.PodLogOptions
		want logs.LogOptions
	}{
		{"empty", v1.PodLogOptions{}, logs.LogOptions{}},
		{"sinceSeconds counts back from now", v1.PodLogOptions{SinceSeconds: ptr.To[int64](90)},
			logs.LogOptions{Since: now.Add(-90 * time.Second)}},
		{"sinceTime", v1.PodLogOptions{SinceTime: &since}, logs.LogOptions{Since: since.Time}},
		{"tail and limit", v1.PodLogOptions{TailLines: ptr.To[int64](5), LimitBytes: ptr.To[int64](100)},
			logs.LogOptions{TailLines: ptr.To[int64](5), LimitBytes: ptr.To[int64](100)}},
		{"follow and timestamps", v1.PodLogOptions{Follow: true, Timestamps: true, Previous: true},
			logs.LogOptions{Follow: true, Timestamp: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, &tt.want, cri.LogOptions(&tt.in, now))
		})
	}
}

// Lines of the test log, in the CRI log format.
const (
	logHello = "2016-10-06T00:17:09.669794202Z stdout F hello\n"
	logOops  = "2016-10-06T00:17:10.669794202Z stderr F oops\n"
	logWorld = "2016-10-06T00:17:11.669794202Z stdout P wor\n" +
		"2016-10-06T00:17:11.769794202Z stdout F ld\n"
)

// logFixture is a fake runtime with container cid (state given) logging
// to a file, and the pod whose status points at it.
type logFixture struct {
	rt      *cri.Runtime
	fake    *fakeapi.FakeRuntimeService
	clock   *clocktesting.FakePassiveClock
	logPath string
	pod     *v1.Pod
}

func newLogFixture(t *testing.T, state runtimeapi.ContainerState, content string) *logFixture {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "0.log")
	require.NoError(t, os.WriteFile(logPath, []byte(content), 0o600))
	fake := fakeapi.NewFakeRuntimeService()
	fake.SetFakeContainers([]*fakeapi.FakeContainer{{ContainerStatus: runtimeapi.ContainerStatus{
		Id: "cid", State: state, LogPath: logPath,
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
		Labels:   map[string]string{cri.LabelPodUID: podUID, cri.LabelContainerName: "c"},
	}}})
	clk := clocktesting.NewFakePassiveClock(time.Date(2016, 10, 6, 0, 17, 10, 700_000_000, time.UTC))
	rt, err := cri.New(cri.Config{Runtime: fake, Clock: clk})
	require.NoError(t, err)
	st := &v1.ContainerStatus{ContainerID: "containerd://cid"}
	if state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		st.State.Running = &v1.ContainerStateRunning{}
	} else {
		st.State.Terminated = terminated("containerd://cid")
	}
	return &logFixture{rt: rt, fake: fake, clock: clk, logPath: logPath, pod: podWith(st)}
}

func (f *logFixture) setState(state runtimeapi.ContainerState) {
	f.fake.Lock()
	defer f.fake.Unlock()
	f.fake.Containers["cid"].State = state
}

func (f *logFixture) appendLog(t *testing.T, content string) {
	t.Helper()
	file, err := os.OpenFile(f.logPath, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = file.WriteString(content)
	require.NoError(t, err)
	require.NoError(t, file.Close())
}

// countingWriter records what it is given, empty writes included.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

func TestContainerLogs(t *testing.T) {
	tests := []struct {
		name           string
		opts           v1.PodLogOptions
		noStdout       bool
		noStderr       bool
		stdout, stderr string
	}{
		{"all", v1.PodLogOptions{}, false, false, "hello\nworld\n", "oops\n"},
		{"follow ends when the container is not running", v1.PodLogOptions{Follow: true}, false, false, "hello\nworld\n", "oops\n"},
		{"stdout only", v1.PodLogOptions{}, false, true, "hello\nworld\n", ""},
		{"stderr only", v1.PodLogOptions{}, true, false, "", "oops\n"},
		{"tailLines", v1.PodLogOptions{TailLines: ptr.To[int64](3)}, false, false, "world\n", "oops\n"},
		{"tailLines 0", v1.PodLogOptions{TailLines: ptr.To[int64](0)}, false, false, "", ""},
		{"timestamps", v1.PodLogOptions{Timestamps: true}, false, false,
			"2016-10-06T00:17:09.669794202Z hello\n2016-10-06T00:17:11.669794202Z world\n", "2016-10-06T00:17:10.669794202Z oops\n"},
		{"limitBytes", v1.PodLogOptions{LimitBytes: ptr.To[int64](8)}, false, false, "hello\n", "oo"},
		{"sinceSeconds from the clock", v1.PodLogOptions{SinceSeconds: ptr.To[int64](1)}, false, false, "world\n", "oops\n"},
		{"sinceTime", v1.PodLogOptions{SinceTime: ptr.To(metav1.NewTime(time.Date(2016, 10, 6, 0, 17, 11, 0, time.UTC)))}, false, false, "world\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			f := newLogFixture(t, runtimeapi.ContainerState_CONTAINER_EXITED, logHello+logOops+logWorld)
			var stdout, stderr countingWriter
			var wout, werr io.Writer = &stdout, &stderr
			if tt.noStdout {
				wout = nil
			}
			if tt.noStderr {
				werr = nil
			}
			err := f.rt.ContainerLogs(context.Background(), f.pod, "c", &tt.opts, wout, werr)
			require.NoError(t, err)
			require.Equal(t, tt.stdout, stdout.String())
			require.Equal(t, tt.stderr, stderr.String())
			// The headers are sent at once: an empty write on the first
			// requested stream.
			if tt.noStdout {
				require.Positive(t, stderr.writes)
			} else {
				require.Positive(t, stdout.writes)
			}
		})
	}
}

// TestContainerLogsWritesFirst checks the empty write that sends the
// response headers before any line, on the one stream asked for.
func TestContainerLogsWritesFirst(t *testing.T) {
	f := newLogFixture(t, runtimeapi.ContainerState_CONTAINER_EXITED, logHello)
	for _, stderrOnly := range []bool{false, true} {
		var w countingWriter
		var stdout, stderr io.Writer = &w, nil
		if stderrOnly {
			stdout, stderr = nil, &w
		}
		opts := &v1.PodLogOptions{TailLines: ptr.To[int64](0)} // no line written
		require.NoError(t, f.rt.ContainerLogs(context.Background(), f.pod, "c", opts, stdout, stderr))
		require.Equal(t, 1, w.writes, "stderr only: %v", stderrOnly)
		require.Empty(t, w.String())
	}
}

func TestContainerLogsPrevious(t *testing.T) {
	f := newLogFixture(t, runtimeapi.ContainerState_CONTAINER_EXITED, logHello)
	pod := podWith(&v1.ContainerStatus{ContainerID: "containerd://new", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}},
		LastTerminationState: v1.ContainerState{Terminated: terminated("containerd://cid")}})
	var out bytes.Buffer
	require.NoError(t, f.rt.ContainerLogs(context.Background(), pod, "c", &v1.PodLogOptions{Previous: true}, &out, &out))
	require.Equal(t, "hello\n", out.String())
}

func TestContainerLogsErrors(t *testing.T) {
	f := newLogFixture(t, runtimeapi.ContainerState_CONTAINER_EXITED, logHello)
	var out bytes.Buffer

	err := f.rt.ContainerLogs(context.Background(), podWith(nil), "c", &v1.PodLogOptions{}, &out, &out)
	require.EqualError(t, err, `container "c" in pod "p" is not available`)

	unknown := podWith(&v1.ContainerStatus{ContainerID: "containerd://gone", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}})
	err = f.rt.ContainerLogs(context.Background(), unknown, "c", &v1.PodLogOptions{}, &out, &out)
	require.ErrorContains(t, err, `failed to get container status "gone"`)

	f.fake.Lock()
	f.fake.Containers["cid"].LogPath = ""
	f.fake.Unlock()
	err = f.rt.ContainerLogs(context.Background(), f.pod, "c", &v1.PodLogOptions{}, &out, &out)
	require.EqualError(t, err, `container "c" in pod "p" has no log path`)

	f.fake.Lock()
	f.fake.Containers["cid"].LogPath = filepath.Join(t.TempDir(), "missing.log")
	f.fake.Unlock()
	err = f.rt.ContainerLogs(context.Background(), f.pod, "c", &v1.PodLogOptions{}, &out, &out)
	require.Error(t, err)
	require.Empty(t, out.String())
}

// lineWriter sends every non-empty write to a channel.
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	if len(p) > 0 {
		w <- string(p)
	}
	return len(p), nil
}

func TestContainerLogsFollowRunning(t *testing.T) {
	defer goleak.VerifyNone(t)
	f := newLogFixture(t, runtimeapi.ContainerState_CONTAINER_RUNNING, logHello)
	lines := make(lineWriter, 10)
	done := make(chan error, 1)
	go func() {
		done <- f.rt.ContainerLogs(context.Background(), f.pod, "c", &v1.PodLogOptions{Follow: true}, lines, lines)
	}()
	require.Equal(t, "hello\n", <-lines)

	f.appendLog(t, logOops)
	require.Equal(t, "oops\n", <-lines, "a line appended while following")

	// Once the container stops, the follow ends (the log reader checks the
	// state on a write or its own 1s timer).
	f.setState(runtimeapi.ContainerState_CONTAINER_EXITED)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the follow did not end after the container stopped")
	}
}

func TestContainerLogsFollowCancel(t *testing.T) {
	defer goleak.VerifyNone(t)
	f := newLogFixture(t, runtimeapi.ContainerState_CONTAINER_RUNNING, logHello)
	lines := make(lineWriter, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- f.rt.ContainerLogs(ctx, f.pod, "c", &v1.PodLogOptions{Follow: true}, lines, lines)
	}()
	require.Equal(t, "hello\n", <-lines)
	cancel()
	select {
	case err := <-done:
		require.Error(t, err, "the log reader reports the cancel")
	case <-time.After(10 * time.Second):
		t.Fatal("the follow did not end with its context")
	}
}

// streamingRuntime is the fake runtime with recorded streaming requests
// that answer a URL.
type streamingRuntime struct {
	*fakeapi.FakeRuntimeService
	url string

	mu       sync.Mutex
	execs    []*runtimeapi.ExecRequest
	attaches []*runtimeapi.AttachRequest
	forwards []*runtimeapi.PortForwardRequest
	syncs    []string
}

func (r *streamingRuntime) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.execs = append(r.execs, req)
	return &runtimeapi.ExecResponse{Url: r.url}, nil
}

func (r *streamingRuntime) Attach(_ context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attaches = append(r.attaches, req)
	return &runtimeapi.AttachResponse{Url: r.url}, nil
}

func (r *streamingRuntime) PortForward(_ context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forwards = append(r.forwards, req)
	return &runtimeapi.PortForwardResponse{Url: r.url}, nil
}

func (r *streamingRuntime) ExecSync(_ context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.syncs = append(r.syncs, id+" "+cmd[0]+" "+timeout.String())
	return []byte("out "), []byte("err"), nil
}

func runningContainer(id, container string, attempt uint32, created int64, state runtimeapi.ContainerState) *fakeapi.FakeContainer {
	return &fakeapi.FakeContainer{ContainerStatus: runtimeapi.ContainerStatus{
		Id: id, State: state, CreatedAt: created,
		Metadata: &runtimeapi.ContainerMetadata{Name: container, Attempt: attempt},
		Labels:   map[string]string{cri.LabelPodUID: podUID, cri.LabelContainerName: container},
	}}
}

func TestStreamingNotFound(t *testing.T) {
	fake := &streamingRuntime{FakeRuntimeService: fakeapi.NewFakeRuntimeService(), url: "http://127.0.0.1:1/x"}
	// Only an exited c, a running c of another pod and a running c2.
	other := runningContainer("other", "c", 0, 1, runtimeapi.ContainerState_CONTAINER_RUNNING)
	other.Labels[cri.LabelPodUID] = "uid-2"
	fake.SetFakeContainers([]*fakeapi.FakeContainer{
		runningContainer("exited", "c", 0, 1, runtimeapi.ContainerState_CONTAINER_EXITED),
		other,
		runningContainer("c2", "c2", 0, 1, runtimeapi.ContainerState_CONTAINER_RUNNING),
	})
	notReady := &fakeapi.FakePodSandbox{PodSandboxStatus: runtimeapi.PodSandboxStatus{
		Id: "sb", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, Labels: map[string]string{cri.LabelPodUID: podUID},
	}}
	fake.SetFakeSandboxes([]*fakeapi.FakePodSandbox{notReady})
	rt, err := cri.New(cri.Config{Runtime: fake})
	require.NoError(t, err)
	ctx, pod := context.Background(), podWith(nil)

	check := func(err error, msg string) {
		t.Helper()
		var se *kubeletapi.StatusError
		require.ErrorAs(t, err, &se)
		require.Equal(t, http.StatusNotFound, se.Code)
		require.EqualError(t, err, msg)
	}
	_, err = rt.Exec(ctx, pod, "c", []string{"sh"}, kubeletapi.StreamOptions{Stdout: true})
	check(err, `container not found ("c")`)
	_, err = rt.Attach(ctx, pod, "c", kubeletapi.StreamOptions{Stdout: true})
	check(err, `container not found ("c")`)
	_, err = rt.RunInContainer(ctx, pod, "c", []string{"date"})
	check(err, `container not found ("c")`)
	_, err = rt.PortForward(ctx, pod, []int32{80})
	check(err, `pod not found ("ns/p")`)
	require.Empty(t, fake.execs)
	require.Empty(t, fake.attaches)
	require.Empty(t, fake.forwards)
	require.Empty(t, fake.syncs)

	// A runtime error is not a 404.
	fake.InjectError("ListContainers", errors.New("runtime down"))
	_, err = rt.Exec(ctx, pod, "c", []string{"sh"}, kubeletapi.StreamOptions{Stdout: true})
	require.EqualError(t, err, "list containers: runtime down")
	var se *kubeletapi.StatusError
	require.False(t, errors.As(err, &se))
	fake.InjectError("ListPodSandbox", errors.New("runtime down"))
	_, err = rt.PortForward(ctx, pod, []int32{80})
	require.EqualError(t, err, "list pod sandboxes: runtime down")
}

func TestStreamingRequests(t *testing.T) {
	fake := &streamingRuntime{FakeRuntimeService: fakeapi.NewFakeRuntimeService(), url: "http://127.0.0.1:1/stream/token"}
	fake.SetFakeContainers([]*fakeapi.FakeContainer{
		runningContainer("old", "c", 0, 5, runtimeapi.ContainerState_CONTAINER_RUNNING),
		runningContainer("new", "c", 1, 1, runtimeapi.ContainerState_CONTAINER_RUNNING),
		runningContainer("dead", "c", 2, 9, runtimeapi.ContainerState_CONTAINER_EXITED),
	})
	sandbox := func(id string, created int64, state runtimeapi.PodSandboxState) *fakeapi.FakePodSandbox {
		return &fakeapi.FakePodSandbox{PodSandboxStatus: runtimeapi.PodSandboxStatus{
			Id: id, State: state, CreatedAt: created, Labels: map[string]string{cri.LabelPodUID: podUID},
		}}
	}
	fake.SetFakeSandboxes([]*fakeapi.FakePodSandbox{
		sandbox("sb-old", 1, runtimeapi.PodSandboxState_SANDBOX_READY),
		sandbox("sb-new", 2, runtimeapi.PodSandboxState_SANDBOX_READY),
		sandbox("sb-gone", 3, runtimeapi.PodSandboxState_SANDBOX_NOTREADY),
	})
	rt, err := cri.New(cri.Config{Runtime: fake, RunTimeout: 7 * time.Second})
	require.NoError(t, err)
	ctx, pod := context.Background(), podWith(nil)

	h, err := rt.Exec(ctx, pod, "c", []string{"sh", "-c", "date"}, kubeletapi.StreamOptions{Stdin: true, Stdout: true, TTY: true})
	require.NoError(t, err)
	require.NotNil(t, h)
	require.Len(t, fake.execs, 1)
	e := fake.execs[0]
	require.Equal(t, "new", e.ContainerId, "the newest attempt")
	require.Equal(t, []string{"sh", "-c", "date"}, e.Cmd)
	require.True(t, e.Stdin)
	require.True(t, e.Stdout)
	require.False(t, e.Stderr)
	require.True(t, e.Tty)

	h, err = rt.Attach(ctx, pod, "c", kubeletapi.StreamOptions{Stderr: true})
	require.NoError(t, err)
	require.NotNil(t, h)
	require.Len(t, fake.attaches, 1)
	require.Equal(t, "new", fake.attaches[0].ContainerId)
	require.True(t, fake.attaches[0].Stderr)
	require.False(t, fake.attaches[0].Stdout)

	h, err = rt.PortForward(ctx, pod, []int32{80, 443})
	require.NoError(t, err)
	require.NotNil(t, h)
	require.Len(t, fake.forwards, 1)
	require.Equal(t, "sb-new", fake.forwards[0].PodSandboxId, "the newest ready sandbox")
	require.Equal(t, []int32{80, 443}, fake.forwards[0].Port)

	out, err := rt.RunInContainer(ctx, pod, "c", []string{"date"})
	require.NoError(t, err)
	require.Equal(t, "out err", string(out), "stdout then stderr")
	require.Equal(t, []string{"new date 7s"}, fake.syncs)

	fake.url = "http://bad host/"
	_, err = rt.Exec(ctx, pod, "c", []string{"sh"}, kubeletapi.StreamOptions{Stdout: true})
	require.ErrorContains(t, err, `runtime returned a bad streaming URL "http://bad host/"`)
}

func TestRunInContainerError(t *testing.T) {
	fake := fakeapi.NewFakeRuntimeService()
	fake.SetFakeContainers([]*fakeapi.FakeContainer{runningContainer("cid", "c", 0, 1, runtimeapi.ContainerState_CONTAINER_RUNNING)})
	fake.InjectError("ExecSync", errors.New("command timed out"))
	rt, err := cri.New(cri.Config{Runtime: fake})
	require.NoError(t, err)
	_, err = rt.RunInContainer(context.Background(), podWith(nil), "c", []string{"sleep", "99"})
	require.EqualError(t, err, "command timed out")
}

// echoRuntime is an in-process ContainerRuntime that writes its command.
type echoRuntime struct{}

func (echoRuntime) Exec(_ context.Context, _ *v1.Pod, _ string, cmd []string, _ io.Reader, stdout, _ io.WriteCloser, _ bool, _ <-chan kubeletapi.TerminalSize) error {
	_, err := io.WriteString(stdout, strings.Join(cmd, " "))
	return err
}

func (echoRuntime) Attach(context.Context, *v1.Pod, string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan kubeletapi.TerminalSize) error {
	return errors.New("not supported")
}

func (echoRuntime) PortForward(context.Context, *v1.Pod, int32, io.ReadWriteCloser) error {
	return errors.New("not supported")
}

// TestExecThroughKubeletAPI runs kubectl's SPDY exec through kubeletapi's
// /exec, which proxies it to the runtime's streaming server (played by an
// in-process streamer serving the recorded ExecRequest).
func TestExecThroughKubeletAPI(t *testing.T) {
	defer func() {
		// spdystream's connection shutdown goroutine waits 1s to hand a
		// close error (the peer closed first) to nobody.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			if goleak.Find() == nil { // retries for about half a second
				return
			}
		}
		goleak.VerifyNone(t)
	}()
	fake := &streamingRuntime{FakeRuntimeService: fakeapi.NewFakeRuntimeService()}
	fake.SetFakeContainers([]*fakeapi.FakeContainer{runningContainer("cid", "c", 0, 1, runtimeapi.ContainerState_CONTAINER_RUNNING)})
	pod := podWith(nil)

	inline, err := kubeletapi.NewInlineStreamer(echoRuntime{}, 0, 0)
	require.NoError(t, err)
	streaming := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fake.mu.Lock()
		req := fake.execs[len(fake.execs)-1]
		fake.mu.Unlock()
		if r.URL.Path != "/exec/token" || req.ContainerId != "cid" {
			http.NotFound(w, r)
			return
		}
		h, err := inline.Exec(r.Context(), pod, "c", req.Cmd, kubeletapi.StreamOptions{Stdin: req.Stdin, Stdout: req.Stdout, Stderr: req.Stderr, TTY: req.Tty})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer streaming.Close()
	fake.url = streaming.URL + "/exec/token"

	rt, err := cri.New(cri.Config{Runtime: fake})
	require.NoError(t, err)
	srv, err := kubeletapi.New(kubeletapi.Config{
		NodeName: "node-1",
		Addr:     kubeletapi.Disabled, // served through Handler
		Auth:     kubeletapi.AuthConfig{Anonymous: true, AlwaysAllow: true},
		Pods:     kubeletapitest.NewPodLister(pod), Streaming: rt,
	})
	require.NoError(t, err)
	api := httptest.NewServer(srv.Handler())
	defer api.Close()

	u, err := url.Parse(api.URL + "/exec/ns/p/c?command=echo&command=hi&output=1&error=1")
	require.NoError(t, err)
	exec, err := remotecommand.NewSPDYExecutor(&rest.Config{Host: api.URL}, http.MethodPost, u)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	require.NoError(t, exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}))
	require.Equal(t, "echo hi", stdout.String())
	require.Empty(t, stderr.String())
	require.Len(t, fake.execs, 1)
	require.True(t, fake.execs[0].Stdout)
	require.True(t, fake.execs[0].Stderr)
	require.False(t, fake.execs[0].Stdin)
}

// /runningpods/ lists what the runtime runs: pods with a ready sandbox or a
// running container, by the kubelet's labels, with running containers only.
func TestGetRunningPods(t *testing.T) {
	fake := fakeapi.NewFakeRuntimeService()
	labels := func(uid, name string) map[string]string {
		return map[string]string{cri.LabelPodUID: uid, cri.LabelPodName: name, cri.LabelPodNamespace: podNS}
	}
	sandbox := func(id, uid, name string, state runtimeapi.PodSandboxState) *fakeapi.FakePodSandbox {
		return &fakeapi.FakePodSandbox{PodSandboxStatus: runtimeapi.PodSandboxStatus{Id: id, State: state, Labels: labels(uid, name)}}
	}
	fake.SetFakeSandboxes([]*fakeapi.FakePodSandbox{
		sandbox("sb1", podUID, podName, runtimeapi.PodSandboxState_SANDBOX_READY),
		sandbox("sb2", "uid-2", "gone", runtimeapi.PodSandboxState_SANDBOX_NOTREADY),
		sandbox("sb3", "uid-3", "a-idle", runtimeapi.PodSandboxState_SANDBOX_READY),
		{PodSandboxStatus: runtimeapi.PodSandboxStatus{Id: "foreign", State: runtimeapi.PodSandboxState_SANDBOX_READY}},
	})
	app := runningContainer("c1", "app", 0, 1, runtimeapi.ContainerState_CONTAINER_RUNNING)
	app.Image = &runtimeapi.ImageSpec{Image: "registry.k8s.io/pause:3.10"}
	sidecar := runningContainer("c2", "log", 0, 1, runtimeapi.ContainerState_CONTAINER_RUNNING)
	exited := runningContainer("c3", "init", 0, 1, runtimeapi.ContainerState_CONTAINER_EXITED)
	orphan := runningContainer("c4", "left", 0, 1, runtimeapi.ContainerState_CONTAINER_RUNNING)
	orphan.Labels = labels("uid-4", "b-orphan")
	orphan.Labels[cri.LabelContainerName] = "left"
	fake.SetFakeContainers([]*fakeapi.FakeContainer{app, sidecar, exited, orphan})
	for _, c := range []*fakeapi.FakeContainer{app, sidecar, exited} {
		c.Labels[cri.LabelPodName], c.Labels[cri.LabelPodNamespace] = podName, podNS
	}
	rt, err := cri.New(cri.Config{Runtime: fake})
	require.NoError(t, err)

	pods, err := rt.GetRunningPods(context.Background())
	require.NoError(t, err)
	var got []string
	for _, p := range pods {
		s := p.Namespace + "/" + p.Name + "/" + string(p.UID) + ":"
		for _, c := range p.Spec.Containers {
			s += " " + c.Name + "=" + c.Image
		}
		got = append(got, s)
	}
	require.Equal(t, []string{
		"ns/a-idle/uid-3:",
		"ns/b-orphan/uid-4: left=",
		"ns/p/uid-1: app=registry.k8s.io/pause:3.10 log=",
	}, got)

	fake.InjectError("ListPodSandbox", errors.New("runtime down"))
	_, err = rt.GetRunningPods(context.Background())
	require.EqualError(t, err, "list pod sandboxes: runtime down")
}
