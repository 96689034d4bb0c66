package vnodes

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	clocktesting "k8s.io/utils/clock/testing"
	utilexec "k8s.io/utils/exec"

	"github.com/nodekit/nodekit/kubeletapi"
)

// TestAgentKubeletAPI serves logs, /pods and exec of a simulated pod from
// the agent's one kubelet API server, over HTTPS.
func TestAgentKubeletAPI(t *testing.T) {
	defer goleak.VerifyNone(t)
	cs := fake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Now())
	sim, err := NewSimulated(SimulatedConfig{Clock: clk})
	require.NoError(t, err)
	defer sim.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	a, err := New(Config{Client: cs, Nodes: []string{"vn-0", "vn-1"}, Provider: sim, Clock: clk,
		API: &APIConfig{Listener: ln, Anonymous: true, AuthorizationMode: AuthorizationAlwaysAllow}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	// Every node reports the shared server's port.
	for _, name := range []string{"vn-0", "vn-1"} {
		require.Eventually(t, func() bool {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			return err == nil && n.Status.DaemonEndpoints.KubeletEndpoint.Port == int32(port)
		}, 10*time.Second, 10*time.Millisecond, name)
	}

	pod := testPod(v1.RestartPolicyAlways, map[string]string{AnnotationLog: "hello\nworld"})
	pod.Spec.NodeName = "vn-1"
	other := testPod(v1.RestartPolicyAlways, nil)
	other.Name, other.UID, other.Spec.NodeName = "other", "uid-2", "elsewhere"
	for _, p := range []*v1.Pod{pod, other} {
		_, err = cs.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		p, err := cs.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning
	}, 10*time.Second, 10*time.Millisecond)

	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // self-signed test server
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := hc.Get(base + path)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}

	code, body := get("/containerLogs/ns/p/c")
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, "started container c\nhello\nworld\n", body)
	code, body = get("/containerLogs/ns/p/c?tailLines=1&timestamps=true")
	require.Equal(t, http.StatusOK, code, body)
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z world\n$`, body)
	code, body = get("/containerLogs/ns/p/c?previous=true")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, "previous terminated container")
	code, _ = get("/containerLogs/ns/other/c")
	require.Equal(t, http.StatusNotFound, code, "a pod of another node is not served")

	code, body = get("/pods")
	require.Equal(t, http.StatusOK, code, body)
	var list v1.PodList
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Items, 1)
	require.Equal(t, "p", list.Items[0].Name)
	require.Equal(t, v1.PodRunning, list.Items[0].Status.Phase, "the pods carry their status")

	code, _ = get("/healthz")
	require.Equal(t, http.StatusOK, code)

	exec := func(cmd ...string) (string, string, error) {
		t.Helper()
		q := url.Values{"command": cmd, "output": {"1"}, "error": {"1"}}
		u, err := url.Parse(base + "/exec/ns/p/c?" + q.Encode())
		require.NoError(t, err)
		e, err := remotecommand.NewSPDYExecutor(&rest.Config{Host: base, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "POST", u)
		require.NoError(t, err)
		var stdout, stderr bytes.Buffer
		err = e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
		return stdout.String(), stderr.String(), err
	}
	exitCode := func(err error) int {
		t.Helper()
		var ee utilexec.ExitError
		require.True(t, errors.As(err, &ee), "not an exit error: %v", err)
		return ee.ExitStatus()
	}
	out, _, err := exec("echo", "hi")
	require.NoError(t, err)
	require.Equal(t, "hi\n", out)
	out, _, err = exec("hostname")
	require.NoError(t, err)
	require.Equal(t, "p\n", out)
	_, _, err = exec("false")
	require.Equal(t, 1, exitCode(err))
	_, stderr, err := exec("nope")
	require.Equal(t, 127, exitCode(err))
	require.Equal(t, "nope: command not found\n", stderr)

	// A follow returns when the container stops, with its last line.
	resp, err := hc.Get(base + "/containerLogs/ns/p/c?follow=true")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "started container c\n", line)
	require.NoError(t, cs.CoreV1().Pods("ns").Delete(ctx, "p", metav1.DeleteOptions{}))
	tail, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, "hello\nworld\ncontainer c exited with code 0\n", string(tail))

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	_, err = net.Dial("tcp", ln.Addr().String())
	require.Error(t, err, "the listener is closed")
	// The server's close of an exec connection that the client closed
	// first fails (TLS close_notify), and spdystream then keeps a goroutine
	// for up to a second, waiting for someone to read the error.
	require.Eventually(t, func() bool {
		buf := make([]byte, 1<<20)
		return !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "spdystream.(*Connection).shutdown")
	}, 5*time.Second, 20*time.Millisecond)
}

func TestAPIConfigInvalid(t *testing.T) {
	defer goleak.VerifyNone(t)
	cs := fake.NewClientset()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	require.NoError(t, os.WriteFile(garbage, []byte("not a certificate"), 0o600))
	tests := []struct {
		name string
		api  APIConfig
	}{
		{"mode", APIConfig{Anonymous: true, AuthorizationMode: "RBAC"}},
		{"no authentication", APIConfig{}},
		{"negative timeout", APIConfig{Anonymous: true, StreamIdleTimeout: -1}},
		{"cert without key", APIConfig{Anonymous: true, TLSCertFile: garbage}},
		{"bad cert", APIConfig{Anonymous: true, TLSCertFile: garbage, TLSKeyFile: garbage}},
		{"bad client CA", APIConfig{ClientCAFile: garbage}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Client: cs, Nodes: []string{"a"}, API: &tc.api})
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrInvalidConfig) || errors.Is(err, kubeletapi.ErrInvalidConfig), err)
		})
	}
	// Webhook authentication and authorization build without binding or
	// starting anything.
	api := &APIConfig{Addr: "127.0.0.1:1", TokenWebhook: true}
	_, err := New(Config{Client: cs, Nodes: []string{"a"}, API: api})
	require.NoError(t, err)
	require.Empty(t, api.AuthorizationMode, "defaults go to a copy")
}

func TestSimulatedLogs(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := clocktesting.NewFakeClock(t0)
	sim, err := NewSimulated(SimulatedConfig{ReadyDelay: 2 * time.Second, Clock: clk})
	require.NoError(t, err)
	defer sim.Close()
	ctx := context.Background()
	pod := testPod(v1.RestartPolicyNever, map[string]string{AnnotationLog: "a\nb\n", AnnotationExitAfter: "10s", AnnotationExitCode: "3"})
	logs := func(opts v1.PodLogOptions) (string, error) {
		var b strings.Builder
		err := sim.ContainerLogs(ctx, pod, "c", &opts, &b, &b)
		return b.String(), err
	}
	require.NoError(t, sim.CreatePod(ctx, pod))
	_, err = logs(v1.PodLogOptions{})
	require.EqualError(t, err, `container "c" in pod "p" is waiting to start: ContainerCreating`)

	clk.Step(2 * time.Second) // running since t0+2s
	out, err := logs(v1.PodLogOptions{})
	require.NoError(t, err)
	require.Equal(t, "started container c\na\nb\n", out)
	two, five := int64(2), int64(5)
	out, _ = logs(v1.PodLogOptions{TailLines: &two, Timestamps: true})
	require.Equal(t, "2026-01-01T00:00:02.000000000Z a\n2026-01-01T00:00:02.000000000Z b\n", out)
	out, _ = logs(v1.PodLogOptions{LimitBytes: &five})
	require.Equal(t, "start", out)
	err = sim.Exec(ctx, pod, "init", []string{"true"}, nil, nil, nil, false, nil)
	require.ErrorContains(t, err, "not found")

	// A follower gets the exit line when the container exits.
	followed := make(chan string, 1)
	go func() {
		out, _ := logs(v1.PodLogOptions{Follow: true, SinceTime: &metav1.Time{Time: t0.Add(5 * time.Second)}})
		followed <- out
	}()
	clk.Step(10 * time.Second)
	require.Equal(t, "container c exited with code 3\n", <-followed)

	// Forgotten (finished): the log is rebuilt from the status.
	st, err := sim.PodStatus(ctx, pod)
	require.NoError(t, err)
	sim.ForgetPod(pod.UID)
	pod.Status = *st
	out, err = logs(v1.PodLogOptions{})
	require.NoError(t, err)
	require.Equal(t, "started container c\na\nb\ncontainer c exited with code 3\n", out)
	err = sim.Exec(ctx, pod, "c", []string{"true"}, nil, nil, nil, false, nil)
	require.ErrorContains(t, err, "not running")
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func TestSimulatedExec(t *testing.T) {
	sim, err := NewSimulated(SimulatedConfig{Clock: clocktesting.NewFakeClock(t0)})
	require.NoError(t, err)
	defer sim.Close()
	ctx := context.Background()
	pod := testPod(v1.RestartPolicyAlways, nil)
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", ValueFrom: &v1.EnvVarSource{}}}
	require.NoError(t, sim.CreatePod(ctx, pod))
	run := func(stdin string, cmd ...string) (string, string, error) {
		var out, errb bytes.Buffer
		err := sim.Exec(ctx, pod, "c", cmd, strings.NewReader(stdin), nopCloser{&out}, nopCloser{&errb}, false, nil)
		return out.String(), errb.String(), err
	}
	out, _, err := run("", "/bin/echo", "a", "b")
	require.NoError(t, err)
	require.Equal(t, "a b\n", out)
	out, _, err = run("", "env")
	require.NoError(t, err)
	require.Equal(t, "HOSTNAME=p\nA=1\n", out)
	out, _, err = run("in", "cat")
	require.NoError(t, err)
	require.Equal(t, "in", out)
	_, _, err = run("", "true")
	require.NoError(t, err)
	_, _, err = run("", "false")
	require.Equal(t, utilexec.CodeExitError{Err: errors.New("exit status 1"), Code: 1}, err)
	_, errOut, err := run("", "ls")
	require.Equal(t, 127, err.(utilexec.ExitError).ExitStatus())
	require.Equal(t, "ls: command not found\n", errOut)
	require.EqualError(t, sim.PortForward(ctx, pod, 80, nil), "port forwarding is not supported by the simulated provider")
}
