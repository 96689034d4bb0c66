package basemetrics

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// component-base's defaults for build information the binary lacks.
const (
	defaultGitVersion = "v0.0.0-master+$Format:%H$"
	defaultGitCommit  = "$Format:%H$"
	defaultBuildDate  = "1970-01-01T00:00:00Z"
)

// Config configures Register.
type Config struct {
	// Registerer receives the families; nil registers nothing.
	Registerer prometheus.Registerer
	// NodeName, if set, is reported as kubelet_node_name{node="NodeName"} 1.
	NodeName string
	// Version is kubernetes_build_info's git_version (its major and minor
	// are parsed from it): the version the agent reports as its Node's
	// kubeletVersion. Default: the main module's version from the
	// binary's build information, else component-base's default.
	Version string
}

// Info is what kubernetes_build_info reports, component-base's
// version.Info fields.
type Info struct {
	Major, Minor, GitVersion, GitCommit, GitTreeState, BuildDate, GoVersion, Compiler, Platform string
}

var versionRE = regexp.MustCompile(`^v?(\d+)\.(\d+)`)

// ReadInfo returns the build information of the running binary reporting
// version (see Config.Version for the default): the VCS revision, commit
// time and modification flag (clean or dirty) the Go toolchain recorded,
// the Go version, compiler and platform.
func ReadInfo(version string) Info {
	info := Info{GitVersion: version, GitCommit: defaultGitCommit, BuildDate: defaultBuildDate,
		GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if info.GitVersion == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.GitVersion = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.GitCommit = s.Value
			case "vcs.time":
				info.BuildDate = s.Value
			case "vcs.modified":
				info.GitTreeState = map[string]string{"true": "dirty", "false": "clean"}[s.Value]
			}
		}
	}
	if info.GitVersion == "" {
		info.GitVersion = defaultGitVersion
	}
	if m := versionRE.FindStringSubmatch(info.GitVersion); m != nil {
		info.Major, info.Minor = m[1], m[2]
	}
	return info
}

// Register adds the base families (see the package doc) to
// cfg.Registerer. A family already registered there is an error; nothing
// is registered without a Registerer.
func Register(cfg Config) error {
	reg := cfg.Registerer
	if reg == nil {
		return nil
	}
	info := ReadInfo(cfg.Version)
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kubernetes_build_info",
		Help: "[BETA] A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running."},
		[]string{"major", "minor", "git_version", "git_commit", "git_tree_state", "build_date", "go_version", "compiler", "platform"})
	build.WithLabelValues(info.Major, info.Minor, info.GitVersion, info.GitCommit, info.GitTreeState, info.BuildDate,
		info.GoVersion, info.Compiler, info.Platform).Set(1)
	cs := []prometheus.Collector{
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsAll)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		build,
	}
	if cfg.NodeName != "" {
		node := prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "node_name",
			Help: "[ALPHA] The node's name. The count is always 1."}, []string{"node"})
		node.WithLabelValues(cfg.NodeName).Set(1)
		cs = append(cs, node)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("basemetrics: register: %w", err)
		}
	}
	return nil
}
