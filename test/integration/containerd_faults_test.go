package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// containerdDir is the directory of the private containerd of the suite
// (make containerd-test sets NODEKIT_CONTAINERD_DIR): its config, pid file
// and log, so a test can stop and start it.
func containerdDir(t *testing.T) string {
	containerdEndpoint(t)
	dir := os.Getenv("NODEKIT_CONTAINERD_DIR")
	if dir == "" {
		t.Skip("NODEKIT_CONTAINERD_DIR not set (make containerd-test sets it)")
	}
	return dir
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// TestReferenceAgentRuntimeRestartContainerd stops containerd under a
// running pod and starts it again. The node turns NotReady with the
// runtime's error while containerd is away and Ready once it is back; the
// pod's container (kept alive by its shim) is adopted again, not restarted;
// the agent leaks no goroutines or file descriptors.
func TestReferenceAgentRuntimeRestartContainerd(t *testing.T) {
	dir := containerdDir(t)
	const node = "ctd-restart-node"
	ctx, _ := runContainerdAgent(t, node, nil)
	admin := srv.AdminClient()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ctd-restart"}, Spec: v1.PodSpec{NodeName: node,
		Containers: []v1.Container{{Name: "app", Image: busybox, Command: []string{"sleep", "3600"}}}}}
	_, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	id := func() string {
		p := getPod(t, admin, "ctd-restart")
		if p == nil || p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Running == nil {
			return ""
		}
		return p.Status.ContainerStatuses[0].ContainerID
	}
	require.Eventually(t, func() bool { return id() != "" }, 90*time.Second, 250*time.Millisecond)
	before := id()
	require.Eventually(t, func() bool { return nodeCondition(t, admin, node, v1.NodeReady) == v1.ConditionTrue }, 60*time.Second, 250*time.Millisecond)
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)

	// Stop containerd (its shims, and the container, keep running).
	pidFile := filepath.Join(dir, "containerd.pid")
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, syscall.SIGTERM))
	require.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 30*time.Second, 100*time.Millisecond, "containerd stopped")
	stopped := time.Now()
	var message string
	require.Eventually(t, func() bool {
		n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady && c.Status == v1.ConditionFalse {
				message = c.Message
				return true
			}
		}
		return false
	}, 60*time.Second, 250*time.Millisecond, "NotReady while the runtime is away")
	notReadyAfter := time.Since(stopped)
	assert.Contains(t, message, "container runtime is down")

	// Start it again on the same state.
	log, err := os.OpenFile(filepath.Join(dir, "containerd.log"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer log.Close()
	cmd := exec.Command("containerd", "--config", filepath.Join(dir, "config.toml"))
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	require.NoError(t, os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)) // the suite stops it at the end
	go func() { _ = cmd.Wait() }()
	restarted := time.Now()
	require.Eventually(t, func() bool { return nodeCondition(t, admin, node, v1.NodeReady) == v1.ConditionTrue }, 90*time.Second, 250*time.Millisecond,
		"Ready again once containerd is back")
	readyAfter := time.Since(restarted)
	require.Eventually(t, func() bool { return id() != "" }, 30*time.Second, 250*time.Millisecond)
	assert.Equal(t, before, id(), "the same container, adopted")
	assert.Zero(t, getPod(t, admin, "ctd-restart").Status.ContainerStatuses[0].RestartCount)

	// Settle, then compare goroutines and descriptors with before the stop.
	var g, f int
	require.Eventually(t, func() bool {
		g, f = runtime.NumGoroutine(), openFDs(t)
		return g <= goroutines+10 && f <= fds+5
	}, 30*time.Second, 500*time.Millisecond, "goroutines %d→%d, fds %d→%d", goroutines, g, fds, f)
	grace := int64(1)
	require.NoError(t, admin.CoreV1().Pods("default").Delete(ctx, "ctd-restart", metav1.DeleteOptions{GracePeriodSeconds: &grace}))
	require.Eventually(t, func() bool { return getPod(t, admin, "ctd-restart") == nil }, 60*time.Second, 250*time.Millisecond,
		"the agent finishes the deletion after the restart")
	t.Logf("containerd restart: NotReady %v after the stop (%q), Ready %v after the start; goroutines %d→%d, fds %d→%d",
		notReadyAfter.Round(time.Millisecond), message, readyAfter.Round(time.Millisecond), goroutines, g, fds, f)
}
