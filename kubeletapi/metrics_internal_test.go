package kubeletapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPathBucket(t *testing.T) {
	for _, tc := range []struct {
		path        string
		readwrite   string
		readonly    string
		longRunning bool
	}{
		{"/healthz", "healthz", "healthz", false},
		{"/healthz/syncloop", "healthz", "healthz", false},
		{"/pods/", "pods", "pods", false},
		{"/stats/summary", "stats", "stats", false},
		{"/metrics", "metrics", "metrics", false},
		{"/metrics/", "other", "other", false},
		{"/metrics/cadvisor", "metrics/cadvisor", "metrics/cadvisor", false},
		{"/metrics/probes", "metrics/probes", "metrics/probes", false},
		{"/metrics/resource", "metrics/resource", "metrics/resource", false},
		{"/metrics/slis", "other", "other", false}, // the kubelet registers no bucket for it
		{"/metrics/nodes/n/metrics/resource", "other", "other", false},
		{"/exec/ns/p/c", "exec", "exec", true},
		{"/attach/ns/p/c", "attach", "attach", true},
		{"/portForward/ns/p", "portForward", "portForward", true},
		{"/run/ns/p/c", "run", "run", false},
		{"/containerLogs/ns/p/c", "containerLogs", "containerLogs", false},
		{"/runningpods/", "runningpods", "runningpods", false},
		{"/logs/", "logs", "logs", false},
		{"/configz", "configz", "other", false},
		{"/debug/pprof/", "debug", "other", true},
		{"/checkpoint/ns/p/c", "checkpoint", "other", false},
		{"/flagz", "flagz", "other", false},
		{"/statusz", "statusz", "other", false},
		{"/", "other", "other", false},
		{"/nope/x", "other", "other", false},
	} {
		require.Equal(t, tc.readwrite, pathBucket(tc.path, false), tc.path)
		require.Equal(t, tc.readonly, pathBucket(tc.path, true), tc.path)
		require.Equal(t, tc.longRunning, longRunning(pathBucket(tc.path, false)), tc.path)
	}
}

func TestMethodBucket(t *testing.T) {
	for _, m := range []string{http.MethodOptions, http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodTrace, http.MethodConnect} {
		require.Equal(t, m, methodBucket(m))
	}
	for _, m := range []string{http.MethodPatch, "get", "PROPFIND", ""} {
		require.Equal(t, "other", methodBucket(m), m)
	}
}
