package kubeletapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/kubeletapi"
)

func TestPods(t *testing.T) {
	srv, f := newServer(t, nil)
	other := testPod()
	other.Namespace, other.Name, other.UID = "kube-system", "q", "uid-2"
	f.pods.Add(other)

	for _, path := range []string{"/pods", "/pods/"} {
		w := get(srv.Handler(), path)
		require.Equal(t, http.StatusOK, w.Code)
		require.Equal(t, "application/json", w.Header().Get("Content-Type"))
		var list v1.PodList
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &list))
		require.Equal(t, "PodList", list.Kind)
		require.Equal(t, "v1", list.APIVersion)
		var names []string
		for _, p := range list.Items {
			names = append(names, p.Namespace+"/"+p.Name)
		}
		require.Equal(t, []string{"kube-system/q", "ns/p"}, names)
	}

	f.pods.Set()
	w := get(srv.Handler(), "/pods")
	require.Equal(t, http.StatusOK, w.Code)
	require.JSONEq(t, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":null}`, w.Body.String())
}

type runningPods struct {
	pods []*v1.Pod
	err  error
}

func (r runningPods) GetRunningPods(context.Context) ([]*v1.Pod, error) { return r.pods, r.err }

func TestRunningPods(t *testing.T) {
	srv, _ := newServer(t, nil)
	require.Equal(t, http.StatusNotFound, get(srv.Handler(), "/runningpods/").Code, "not served without a lister")

	running := testPod()
	running.Spec = v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img"}}}
	srv, _ = newServer(t, func(c *kubeletapi.Config) { c.RunningPods = runningPods{pods: []*v1.Pod{running}} })
	for _, path := range []string{"/runningpods", "/runningpods/"} {
		w := get(srv.Handler(), path)
		require.Equal(t, http.StatusOK, w.Code, path)
		require.JSONEq(t, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"p","namespace":"ns","uid":"uid-1"},
			"spec":{"containers":[{"name":"c","image":"img","resources":{}}]},"status":{}}]}`, w.Body.String())
	}
	srv, _ = newServer(t, func(c *kubeletapi.Config) { c.RunningPods = runningPods{err: errors.New("runtime down")} })
	w := get(srv.Handler(), "/runningpods/")
	require.Equal(t, http.StatusInternalServerError, w.Code)
	require.Contains(t, w.Body.String(), "runtime down")
}

func testSummary() *statsapi.Summary {
	ts := metav1.NewTime(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
	cpu := &statsapi.CPUStats{Time: ts, UsageCoreNanoSeconds: ptr.To[uint64](2_500_000_000), UsageNanoCores: ptr.To[uint64](1000)}
	mem := &statsapi.MemoryStats{Time: ts, WorkingSetBytes: ptr.To[uint64](1 << 20)}
	fs := &statsapi.FsStats{Time: ts, UsedBytes: ptr.To[uint64](4096)}
	return &statsapi.Summary{
		Node: statsapi.NodeStats{
			NodeName: nodeName, StartTime: ts, CPU: cpu, Memory: mem, Fs: fs,
			Network: &statsapi.NetworkStats{Time: ts},
			Swap:    &statsapi.SwapStats{Time: ts, SwapUsageBytes: ptr.To[uint64](7)},
		},
		Pods: []statsapi.PodStats{{
			PodRef:    statsapi.PodReference{Namespace: podNS, Name: podName, UID: podUID},
			StartTime: ts, CPU: cpu, Memory: mem, EphemeralStorage: fs,
			Containers: []statsapi.ContainerStats{{Name: "c", StartTime: ts, CPU: cpu, Memory: mem, Rootfs: fs, Logs: fs}},
		}},
	}
}

func TestStatsSummary(t *testing.T) {
	srv, f := newServer(t, nil)
	f.summary.Set(testSummary())

	w := get(srv.Handler(), "/stats/summary")
	require.Equal(t, http.StatusOK, w.Code)
	var full statsapi.Summary
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &full))
	require.NotNil(t, full.Node.Fs)
	require.NotNil(t, full.Pods[0].Containers[0].Rootfs)

	for _, q := range []string{"only_cpu_and_memory=true", "only_cpu_and_memory=1"} {
		w = get(srv.Handler(), "/stats/summary?"+q)
		require.Equal(t, http.StatusOK, w.Code, q)
		var trimmed statsapi.Summary
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &trimmed))
		require.Equal(t, nodeName, trimmed.Node.NodeName)
		require.Nil(t, trimmed.Node.Fs, q)
		require.Nil(t, trimmed.Node.Network)
		require.NotNil(t, trimmed.Node.Swap, "the kubelet keeps swap in the CPU-and-memory summary")
		require.Equal(t, uint64(2_500_000_000), *trimmed.Node.CPU.UsageCoreNanoSeconds)
		require.Equal(t, uint64(1<<20), *trimmed.Node.Memory.WorkingSetBytes)
		require.Len(t, trimmed.Pods, 1)
		require.Nil(t, trimmed.Pods[0].EphemeralStorage)
		require.NotNil(t, trimmed.Pods[0].CPU)
		require.Len(t, trimmed.Pods[0].Containers, 1)
		require.Nil(t, trimmed.Pods[0].Containers[0].Rootfs)
		require.Nil(t, trimmed.Pods[0].Containers[0].Logs)
		require.NotNil(t, trimmed.Pods[0].Containers[0].Memory)
	}

	for _, q := range []string{"only_cpu_and_memory=false", "only_cpu_and_memory"} {
		w = get(srv.Handler(), "/stats/summary?"+q)
		require.Equal(t, http.StatusOK, w.Code)
		require.Contains(t, w.Body.String(), `"fs"`, q)
	}

	w = get(srv.Handler(), "/stats/summary?only_cpu_and_memory=maybe")
	require.Equal(t, http.StatusBadRequest, w.Code)
	require.Contains(t, w.Body.String(), "only_cpu_and_memory: ")

	f.summary.SetError(errors.New("cadvisor down"))
	w = get(srv.Handler(), "/stats/summary")
	require.Equal(t, http.StatusInternalServerError, w.Code)
	require.Equal(t, "Internal Error: failed to get node stats summary: cadvisor down\n", w.Body.String())
}

func TestResourceMetrics(t *testing.T) {
	srv, f := newServer(t, nil)
	f.summary.Set(testSummary())

	w := get(srv.Handler(), "/metrics/resource")
	require.Equal(t, http.StatusOK, w.Code)
	body := w.Body.String()
	const ms = " 1704164645000\n" // the stats' timestamp
	for _, want := range []string{
		"resource_scrape_error 0\n",
		"node_cpu_usage_seconds_total 2.5" + ms,
		"node_memory_working_set_bytes 1.048576e+06" + ms,
		"node_swap_usage_bytes 7" + ms,
		`container_cpu_usage_seconds_total{container="c",namespace="ns",pod="p"} 2.5` + ms,
		`container_memory_working_set_bytes{container="c",namespace="ns",pod="p"} 1.048576e+06` + ms,
		`container_start_time_seconds{container="c",namespace="ns",pod="p"} 1.704164645e+09` + "\n",
		`pod_cpu_usage_seconds_total{namespace="ns",pod="p"} 2.5` + ms,
		`pod_memory_working_set_bytes{namespace="ns",pod="p"} 1.048576e+06` + ms,
		"# TYPE node_cpu_usage_seconds_total counter",
		"# TYPE container_memory_working_set_bytes gauge",
	} {
		require.Contains(t, body, want)
	}
	require.NotContains(t, body, "container_swap_usage_bytes{", "no swap stats for the container")

	f.summary.SetError(errors.New("cadvisor down"))
	w = get(srv.Handler(), "/metrics/resource")
	require.Equal(t, http.StatusOK, w.Code)
	require.Contains(t, w.Body.String(), "resource_scrape_error 1\n")
	require.NotContains(t, w.Body.String(), "node_cpu_usage_seconds_total ")
}

func TestNodeSummaries(t *testing.T) {
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.NodeName, c.MultiNode = "", true
		c.NodeSummary = func(_ context.Context, node string) (*statsapi.Summary, error) {
			switch node {
			case "vn-1":
				sum := testSummary()
				sum.Node.NodeName = node
				return sum, nil
			case "broken":
				return nil, errors.New("provider down")
			}
			return nil, nil
		}
	})
	h := srv.Handler()
	w := get(h, "/stats/nodes/vn-1/summary?only_cpu_and_memory=true")
	require.Equal(t, http.StatusOK, w.Code)
	var sum statsapi.Summary
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &sum))
	require.Equal(t, "vn-1", sum.Node.NodeName)
	require.Nil(t, sum.Node.Fs)

	w = get(h, "/metrics/nodes/vn-1/metrics/resource")
	require.Equal(t, http.StatusOK, w.Code)
	require.Contains(t, w.Body.String(), `pod_cpu_usage_seconds_total{namespace="ns",pod="p"} 2.5`)

	for _, path := range []string{"/stats/nodes/vn-2/summary", "/metrics/nodes/vn-2/metrics/resource"} {
		w = get(h, path)
		require.Equal(t, http.StatusNotFound, w.Code, path)
		require.Equal(t, "node \"vn-2\" is not served here\n", w.Body.String())
	}
	require.Equal(t, http.StatusInternalServerError, get(h, "/stats/nodes/broken/summary").Code)
	require.Contains(t, get(h, "/metrics/nodes/broken/metrics/resource").Body.String(), "resource_scrape_error 1\n")

	// A single node has no such paths.
	srv, _ = newServer(t, nil)
	require.Equal(t, http.StatusNotFound, get(srv.Handler(), "/metrics/nodes/vn-1/metrics/resource").Code)
	_, err := kubeletapi.New(kubeletapi.Config{NodeName: "n", Pods: nil,
		NodeSummary: func(context.Context, string) (*statsapi.Summary, error) { return nil, nil }})
	require.ErrorContains(t, err, "NodeSummary needs MultiNode")
}

func TestMetricsEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	probes := prometheus.NewRegistry()
	probes.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "prober_probe_total", Help: "h"}))
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.Metrics, c.ProbeMetrics, c.Registerer = reg, probes, reg
	})
	h := srv.Handler()
	require.Equal(t, http.StatusOK, get(h, "/pods").Code)
	require.Equal(t, http.StatusOK, do(h, http.MethodPost, "/exec/ns/p/c?output=1").Code)
	require.Equal(t, http.StatusNotFound, get(h, "/nope").Code)

	w := get(h, "/metrics/probes")
	require.Equal(t, http.StatusOK, w.Code)
	require.Contains(t, w.Body.String(), "prober_probe_total 0")

	w = get(h, "/metrics")
	require.Equal(t, http.StatusOK, w.Code)
	body := w.Body.String()
	for _, want := range []string{
		`kubelet_http_requests_total{long_running="false",method="GET",path="pods",server_type="readwrite"} 1`,
		`kubelet_http_requests_total{long_running="true",method="POST",path="exec",server_type="readwrite"} 1`,
		`kubelet_http_requests_total{long_running="false",method="GET",path="other",server_type="readwrite"} 1`,
		`kubelet_http_requests_total{long_running="false",method="GET",path="metrics/probes",server_type="readwrite"} 1`,
		`kubelet_http_inflight_requests{long_running="false",method="GET",path="metrics",server_type="readwrite"} 1`,
		`kubelet_http_inflight_requests{long_running="false",method="GET",path="pods",server_type="readwrite"} 0`,
	} {
		require.Contains(t, body, want)
	}

	// A second server on the same registry cannot register its metrics.
	cfg, _ := baseConfig()
	cfg.Registerer = reg
	_, err := kubeletapi.New(cfg)
	require.Error(t, err)
}

func TestHealthz(t *testing.T) {
	var syncloopErr error
	srv, _ := newServer(t, func(c *kubeletapi.Config) {
		c.HealthChecks = []kubeletapi.HealthCheck{
			{Name: "syncloop", Check: func() error { return syncloopErr }},
			{Name: "pleg", Check: func() error { return nil }},
		}
	})
	h := srv.Handler()
	tests := []struct {
		name        string
		syncloopErr error
		path        string
		code        int
		body        string
	}{
		{"healthy", nil, "/healthz", http.StatusOK, "ok"},
		{"verbose", nil, "/healthz?verbose", http.StatusOK, "[+]ping ok\n[+]syncloop ok\n[+]pleg ok\nhealthz check passed\n"},
		{"check", nil, "/healthz/syncloop", http.StatusOK, "ok"},
		{"ping", nil, "/healthz/ping", http.StatusOK, "ok"},
		{"unknown check", nil, "/healthz/nope", http.StatusNotFound, "404 page not found\n"},
		{"failing", errors.New("loop stuck for 3m"), "/healthz", http.StatusInternalServerError,
			"[+]ping ok\n[-]syncloop failed: reason withheld\n[+]pleg ok\nhealthz check failed\n"},
		{"failing verbose", errors.New("loop stuck for 3m"), "/healthz?verbose=1", http.StatusInternalServerError,
			"[+]ping ok\n[-]syncloop failed: reason withheld\n[+]pleg ok\nhealthz check failed\n"},
		{"failing check gives the reason", errors.New("loop stuck for 3m"), "/healthz/syncloop", http.StatusInternalServerError,
			"internal server error: loop stuck for 3m\n"},
		{"other check still ok", errors.New("loop stuck for 3m"), "/healthz/pleg", http.StatusOK, "ok"},
		{"excluded", errors.New("loop stuck for 3m"), "/healthz?exclude=syncloop", http.StatusOK, "ok"},
		{"excluded verbose", errors.New("loop stuck for 3m"), "/healthz?exclude=syncloop&verbose", http.StatusOK,
			"[+]ping ok\n[+]syncloop excluded: ok\n[+]pleg ok\nhealthz check passed\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			syncloopErr = tt.syncloopErr
			w := get(h, tt.path)
			require.Equal(t, tt.code, w.Code)
			require.Equal(t, tt.body, w.Body.String())
		})
	}
}

func TestNodeLogs(t *testing.T) {
	t.Run("disabled", func(t *testing.T) {
		srv, _ := newServer(t, nil)
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			for _, path := range []string{"/logs/", "/logs/kubelet.log"} {
				w := do(srv.Handler(), method, path)
				require.Equal(t, http.StatusMethodNotAllowed, w.Code)
				require.Equal(t, "logs endpoint is disabled.\n", w.Body.String())
			}
		}
	})
	t.Run("served", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "kubelet.log"), []byte("I0101 started\n"), 0o600))
		require.NoError(t, os.Mkdir(filepath.Join(dir, "pods"), 0o755))
		srv, _ := newServer(t, func(c *kubeletapi.Config) { c.NodeLogDir = dir })
		h := srv.Handler()

		w := get(h, "/logs/kubelet.log")
		require.Equal(t, http.StatusOK, w.Code)
		require.Equal(t, "I0101 started\n", w.Body.String())

		w = get(h, "/logs/")
		require.Equal(t, http.StatusOK, w.Code)
		require.Contains(t, w.Body.String(), `<a href="kubelet.log">kubelet.log</a>`)
		require.Contains(t, w.Body.String(), `<a href="pods/">pods/</a>`)

		require.Equal(t, http.StatusNotFound, get(h, "/logs/nope.log").Code)
		require.Equal(t, http.StatusMethodNotAllowed, do(h, http.MethodPost, "/logs/kubelet.log").Code)
		w = get(h, "/logs/../config_test.go")
		require.NotEqual(t, http.StatusOK, w.Code, "no escape from the directory")
	})
}

func TestConfigz(t *testing.T) {
	type kubeletConfig struct {
		MaxPods int `json:"maxPods"`
	}
	srv, _ := newServer(t, func(c *kubeletapi.Config) { c.Configz = kubeletConfig{MaxPods: 110} })
	w := get(srv.Handler(), "/configz")
	require.Equal(t, http.StatusOK, w.Code)
	require.JSONEq(t, `{"kubeletconfig":{"maxPods":110}}`, w.Body.String())

	srv, _ = newServer(t, func(c *kubeletapi.Config) { c.Configz = func() {} })
	w = get(srv.Handler(), "/configz")
	require.Equal(t, http.StatusInternalServerError, w.Code)
	require.True(t, strings.HasPrefix(w.Body.String(), "json: unsupported type"), w.Body.String())
}
