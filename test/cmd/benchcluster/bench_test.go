package main

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRequestKind(t *testing.T) {
	for target, want := range map[string]string{
		"GET /api/v1/namespaces/ns/pods?watch=true":                            "watch pods",
		"GET /api/v1/namespaces/ns/pods":                                       "list pods",
		"GET /api/v1/namespaces/ns/pods/p":                                     "get pods",
		"PATCH /api/v1/namespaces/ns/pods/p/status":                            "patch pods/status",
		"PUT /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n": "update leases",
		"POST /api/v1/namespaces/ns/serviceaccounts/default/token":             "create serviceaccounts/token",
		"PATCH /api/v1/nodes/n/status":                                         "patch nodes/status",
		"GET /api/v1/nodes?fieldSelector=metadata.name%3Dn&watch=true":         "watch nodes",
		"GET /healthz": "GET /healthz",
		"DELETE /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node": "delete leases",
	} {
		var method, path string
		for i := range target {
			if target[i] == ' ' {
				method, path = target[:i], target[i+1:]
				break
			}
		}
		assert.Equal(t, want, requestKind(httptest.NewRequest(method, path, nil)), target)
	}
}

func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	assert.Equal(t, Pct{P50: 50, P99: 99, Max: 100}, percentiles(ds))
	assert.Equal(t, Pct{}, percentiles(nil))
}

func TestCountersSub(t *testing.T) {
	a := Counters{APIRequests: 10, APIBytesSent: 100, APIByKind: map[string]int64{"get pods": 4, "update leases": 6}, CRICalls: 3, CRIByMethod: map[string]int64{"Version": 3},
		CRINanosByMethod: map[string]int64{"Version": 30}}
	b := Counters{APIRequests: 4, APIBytesSent: 40, APIByKind: map[string]int64{"get pods": 4, "update leases": 2}, CRICalls: 1, CRIByMethod: map[string]int64{"Version": 1},
		CRINanosByMethod: map[string]int64{"Version": 10}}
	assert.Equal(t, Counters{APIRequests: 6, APIBytesSent: 60, APIByKind: map[string]int64{"update leases": 4}, CRICalls: 2, CRIByMethod: map[string]int64{"Version": 2},
		CRINanosByMethod: map[string]int64{"Version": 20}}, a.Sub(b))
}

func TestUsage(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := &sampler{}
	for i := range 11 { // one CPU second per second for 5 s, then idle; RSS rises 1 MiB a second
		cpu := time.Duration(min(i, 5)) * time.Second
		s.all = append(s.all, procSample{At: t0.Add(time.Duration(i) * time.Second), CPU: cpu, RSS: int64(i+1) << 20})
	}
	u := s.usage(t0, t0.Add(10*time.Second), 5*time.Second)
	assert.InDelta(t, 0.5, u.CPUCores, 1e-9)
	assert.InDelta(t, 1.0, u.PeakCPUCores, 1e-9)
	assert.Equal(t, int64(11)<<20, u.PeakRSSBytes)
	assert.Equal(t, int64(6)<<20, u.RSSBytes)
	assert.Equal(t, usage{}, s.usage(t0.Add(20*time.Second), t0.Add(30*time.Second), 5*time.Second), "no samples")
}

func TestPodStartSLIHistogram(t *testing.T) {
	text := []byte(`# HELP kubelet_pod_start_sli_duration_seconds ...
# TYPE kubelet_pod_start_sli_duration_seconds histogram
kubelet_pod_start_sli_duration_seconds_bucket{le="0.5"} 0
kubelet_pod_start_sli_duration_seconds_bucket{le="1"} 40
kubelet_pod_start_sli_duration_seconds_bucket{le="2"} 90
kubelet_pod_start_sli_duration_seconds_bucket{le="+Inf"} 100
kubelet_pod_start_sli_duration_seconds_sum 150
kubelet_pod_start_sli_duration_seconds_count 100
kubelet_pod_start_total_duration_seconds_count 7
`)
	buckets, count, err := parseHistogram(text, sliMetric)
	assert.NoError(t, err)
	assert.Equal(t, 100, count)
	assert.Len(t, buckets, 4)
	assert.InDelta(t, 1.2, histogramQuantile(0.5, buckets, count), 1e-9, "40..90 between 1s and 2s")
	assert.InDelta(t, 0.5+0.5*10/40.0, histogramQuantile(0.1, buckets, count), 1e-9)
	assert.InDelta(t, 2, histogramQuantile(0.99, buckets, count), 1e-9, "in +Inf: its lower bound")
	_, _, err = parseHistogram([]byte("other 1\n"), sliMetric)
	assert.Error(t, err)
}

func TestSummarize(t *testing.T) {
	s := summarize([]float64{100, 120, 90}, []float64{50, 66, 60})
	assert.InDelta(t, 100, s.base, 1e-9)
	assert.InDelta(t, 60, s.ours, 1e-9)
	assert.InDelta(t, 0.55, s.ratio, 1e-9, "median of 0.5, 0.55, 0.667")
	assert.InDelta(t, 0.5, s.lo, 1e-9)
	assert.InDelta(t, 2.0/3, s.hi, 1e-9)
}
