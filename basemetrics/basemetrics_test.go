package basemetrics_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/nodekit/nodekit/basemetrics"
)

func TestRegister(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, basemetrics.Register(basemetrics.Config{Registerer: reg, NodeName: "node-1", Version: "v1.36.3"}))
	info := basemetrics.ReadInfo("v1.36.3")
	require.Equal(t, basemetrics.Info{Major: "1", Minor: "36", GitVersion: "v1.36.3", GitCommit: info.GitCommit,
		GitTreeState: info.GitTreeState, BuildDate: info.BuildDate, GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH}, info)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubelet_node_name [ALPHA] The node's name. The count is always 1.
# TYPE kubelet_node_name gauge
kubelet_node_name{node="node-1"} 1
# HELP kubernetes_build_info [BETA] A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.
# TYPE kubernetes_build_info gauge
kubernetes_build_info{build_date="`+info.BuildDate+`",compiler="`+info.Compiler+`",git_commit="`+info.GitCommit+`",git_tree_state="`+info.GitTreeState+`",git_version="v1.36.3",go_version="`+info.GoVersion+`",major="1",minor="36",platform="`+info.Platform+`"} 1
`), "kubelet_node_name", "kubernetes_build_info"))

	families, err := reg.Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	for _, want := range []string{"go_goroutines", "go_gc_duration_seconds", "go_memstats_alloc_bytes", "go_sched_gomaxprocs_threads"} {
		require.True(t, names[want], want)
	}
	if runtime.GOOS == "linux" {
		require.True(t, names["process_cpu_seconds_total"])
		require.True(t, names["process_resident_memory_bytes"])
	}

	err = basemetrics.Register(basemetrics.Config{Registerer: reg, NodeName: "node-1"})
	require.ErrorContains(t, err, "basemetrics: register", "twice on one registry is an error, not a panic")
	require.NoError(t, basemetrics.Register(basemetrics.Config{}), "no registerer, nothing to do")
}

func TestReadInfoDefaults(t *testing.T) {
	info := basemetrics.ReadInfo("v2.5.0-rc.1+nodekit")
	require.Equal(t, "2", info.Major)
	require.Equal(t, "5", info.Minor)
	require.NotEmpty(t, info.GitCommit)
	require.NotEmpty(t, info.BuildDate)
	info = basemetrics.ReadInfo("")
	require.NotEmpty(t, info.GitVersion, "the module's version or component-base's default")
}
