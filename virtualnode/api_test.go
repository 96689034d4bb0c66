package virtualnode

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nodekit/nodekit/virtualnode/simulated"
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
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"
	utilexec "k8s.io/utils/exec"

	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/kubeletapi"
)

// TestAgentKubeletAPI serves logs, /pods and exec of a simulated pod from
// the agent's one kubelet API server, over HTTPS.
func TestAgentKubeletAPI(t *testing.T) {
	defer goleak.VerifyNone(t)
	cs := fake.NewClientset()
	clk := clocktesting.NewFakeClock(time.Now())
	sim, err := simulated.New(simulated.Config{Clock: clk})
	require.NoError(t, err)
	defer sim.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	a, err := New(Config{Client: clientset.Wrap(cs), Nodes: []string{"vn-0", "vn-1"}, Provider: sim, Clock: clk,
		API: &APIConfig{Listener: ln, Anonymous: true, AuthorizationMode: AuthorizationAlwaysAllow}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	// Every node reports the shared server's port, and the path of its
	// resource metrics (the simulator measures its pods).
	for _, name := range []string{"vn-0", "vn-1"} {
		require.Eventually(t, func() bool {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			return err == nil && n.Status.DaemonEndpoints.KubeletEndpoint.Port == int32(port) &&
				n.Annotations[AnnotationResourceMetricsPath] == "/metrics/nodes/"+name+"/metrics/resource"
		}, 10*time.Second, 10*time.Millisecond, name)
	}

	pod := testPod(v1.RestartPolicyAlways, map[string]string{simulated.AnnotationLog: "hello\nworld",
		simulated.AnnotationUsageCPU: "300m", simulated.AnnotationUsageMemory: "10Mi"})
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

	// Stats: the node's running pods, summed as the node's usage.
	code, body = get("/stats/nodes/vn-1/summary")
	require.Equal(t, http.StatusOK, code, body)
	var sum statsapi.Summary
	require.NoError(t, json.Unmarshal([]byte(body), &sum))
	require.Equal(t, "vn-1", sum.Node.NodeName)
	require.Equal(t, uint64(300_000_000), *sum.Node.CPU.UsageNanoCores)
	require.Equal(t, uint64(10<<20), *sum.Node.Memory.WorkingSetBytes)
	require.Len(t, sum.Pods, 1)
	require.Equal(t, statsapi.PodReference{Name: "p", Namespace: "ns", UID: "uid-1"}, sum.Pods[0].PodRef)
	code, body = get("/metrics/nodes/vn-1/metrics/resource")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `pod_memory_working_set_bytes{namespace="ns",pod="p"} 1.048576e+07`)
	require.Contains(t, body, `container_memory_working_set_bytes{container="c",namespace="ns",pod="p"} 1.048576e+07`)
	code, body = get("/metrics/nodes/vn-0/metrics/resource")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "node_memory_working_set_bytes 0", "no pods")
	code, _ = get("/metrics/nodes/elsewhere/metrics/resource")
	require.Equal(t, http.StatusNotFound, code, "not a node of this agent")

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
	sim, err := simulated.New(simulated.Config{})
	require.NoError(t, err)
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
			_, err := New(Config{Client: clientset.Wrap(cs), Nodes: []string{"a"}, API: &tc.api, Provider: sim})
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrInvalidConfig) || errors.Is(err, kubeletapi.ErrInvalidConfig), err)
		})
	}
	// Webhook authentication and authorization build without binding or
	// starting anything.
	api := &APIConfig{Addr: "127.0.0.1:1", TokenWebhook: true}
	_, err = New(Config{Client: clientset.Wrap(cs), Nodes: []string{"a"}, API: api, Provider: sim})
	require.NoError(t, err)
	require.Empty(t, api.AuthorizationMode, "defaults go to a copy")

	// Anonymous exec into every virtual pod from the network is refused
	// (examples/virtualnodes listens on 0.0.0.0 by default); on loopback
	// it is allowed, and New binds nothing to find out.
	for addr, open := range map[string]bool{"": true, "0.0.0.0:10250": true, "127.0.0.1:10250": false} {
		api := &APIConfig{Addr: addr, Anonymous: true, AuthorizationMode: AuthorizationAlwaysAllow}
		_, err := New(Config{Client: clientset.Wrap(cs), Nodes: []string{"a"}, API: api, Provider: sim})
		if open {
			require.ErrorIs(t, err, kubeletapi.ErrOpenAPI, addr)
		} else {
			require.NoError(t, err, addr)
		}
	}
}
