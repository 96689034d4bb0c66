package prober

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// TestDensityServer is not a test: run by TestDensity as a child process,
// it serves the probes' target so that its CPU is not counted as the
// prober's. It prints its port and serves until stdin closes.
func TestDensityServer(t *testing.T) {
	if os.Getenv("NODEKIT_PROBER_DENSITY_SERVER") != "1" {
		t.Skip("helper process of TestDensity")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })}
	go func() { _ = srv.Serve(l) }()
	_, port := hostPort(t, l.Addr().String())
	fmt.Println(port)
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
}

// TestDensity runs 5,000 containers × 2 HTTP probes (liveness and
// readiness, period 10s) on the real clock for NODEKIT_PROBER_DENSITY_SECONDS
// (default 60) against one loopback server in a child process, and reports
// the prober's CPU, goroutines, lateness against schedule over the whole run
// and TIME-WAIT sockets. The containers start at
// NODEKIT_PROBER_DENSITY_RATE per second (default 500: all of them within
// the first period, 25 times the pod start rate of a busy kubelet; 0 starts
// them all at once); each start triggers an immediate readiness probe, as
// in the kubelet, so the first period carries 10,000 probes. Run it with
// NODEKIT_PROBER_DENSITY=1; it is not part of make test.
func TestDensity(t *testing.T) {
	if os.Getenv("NODEKIT_PROBER_DENSITY") != "1" {
		t.Skip("set NODEKIT_PROBER_DENSITY=1 to run")
	}
	seconds := 60
	if s := os.Getenv("NODEKIT_PROBER_DENSITY_SECONDS"); s != "" {
		var err error
		seconds, err = strconv.Atoi(s)
		require.NoError(t, err)
	}
	rate := 500.0
	if s := os.Getenv("NODEKIT_PROBER_DENSITY_RATE"); s != "" {
		var err error
		rate, err = strconv.ParseFloat(s, 64)
		require.NoError(t, err)
	}
	const containers = 5000

	child := exec.Command(os.Args[0], "-test.run=^TestDensityServer$")
	child.Env = append(os.Environ(), "NODEKIT_PROBER_DENSITY_SERVER=1")
	stdin, err := child.StdinPipe()
	require.NoError(t, err)
	stdout, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	defer func() { _ = stdin.Close(); _ = child.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	port, err := strconv.Atoi(line[:len(line)-1])
	require.NoError(t, err)

	m, err := New(Config{})
	require.NoError(t, err)
	var mu sync.Mutex
	var lateness, steady []time.Duration
	var steadyFrom time.Time // after the first period
	m.onStart = func(scheduled, started time.Time) {
		mu.Lock()
		lateness = append(lateness, started.Sub(scheduled))
		if !steadyFrom.IsZero() && scheduled.After(steadyFrom) {
			steady = append(steady, started.Sub(scheduled))
		}
		mu.Unlock()
	}
	cpu0, wall0 := cpuTime(t), time.Now()
	mu.Lock()
	steadyFrom = wall0.Add(10 * time.Second)
	mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runDone := make(chan error, 1)
	go func() { runDone <- m.Run(ctx) }()
	for i := range containers {
		if rate > 0 {
			time.Sleep(time.Until(wall0.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
		}
		probe := func(path string) *v1.Probe {
			return &v1.Probe{PeriodSeconds: 10, ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: intPort(port)}}}
		}
		pod := testPod(fmt.Sprint(i), probe("/livez"), probe("/readyz"), nil)
		require.NoError(t, m.AddPod(pod))
		st := runningStatus(fmt.Sprintf("crisim://c%d", i), time.Now())
		st.ContainerStatuses[0].Started = ptr(true)
		m.UpdatePodStatus(ctx, pod, st)
	}
	var wg sync.WaitGroup
	for _, t := range []ProbeType{Liveness, Readiness} { // the sync loop's part
		wg.Go(func() {
			for {
				select {
				case <-m.Updates(t):
				case <-ctx.Done():
					return
				}
			}
		})
	}
	maxG := 0
	tick := time.NewTicker(time.Second)
	for time.Since(wall0) < time.Duration(seconds)*time.Second {
		<-tick.C
		maxG = max(maxG, runtime.NumGoroutine())
	}
	tick.Stop()
	cpu, wall := cpuTime(t)-cpu0, time.Since(wall0)
	cancel()
	require.NoError(t, <-runDone)
	wg.Wait()

	mu.Lock()
	slices.Sort(lateness)
	n := len(lateness)
	p50, p99, worst := lateness[n/2], lateness[n*99/100], lateness[n-1]
	slices.Sort(steady)
	if k := len(steady); k > 0 {
		t.Logf("after the first period: %d probes, lateness p50 %s p99 %s max %s", k, steady[k/2], steady[k*99/100], steady[k-1])
	}
	mu.Unlock()
	twServer, twClient := timeWaitSides(t, port)
	tw := twServer + twClient
	t.Logf("containers started at %g/s (0: at once); over the whole run:", rate)
	t.Logf("%d probes in %s: CPU %s = %.1f%% of one core; max goroutines %d; lateness p50 %s p99 %s max %s; TIME-WAIT sockets to the server port: %d (server side %d, prober side %d)",
		n, wall.Round(time.Millisecond), cpu.Round(time.Millisecond), 100*cpu.Seconds()/wall.Seconds(), maxG, p50, p99, worst, tw, twServer, twClient)
	require.Zero(t, tw)
	if rate > 0 {
		require.Less(t, p99, 50*time.Millisecond, "probe lateness p99 over the whole run")
	}
}
