package stats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nodekit/nodekit/internal/cgroupstat"
)

// podCgroups finds the cgroups of pods below the pods cgroup, and of their
// containers and sandboxes below a pod's, as cadvisor sees them: the pod
// cgroups the kubelet's (and nodekit's cgroups block's) drivers name, and
// the container cgroups the runtimes name. Directories are listed at most
// once each, on first need; one podCgroups serves one pass.
type podCgroups struct {
	fs   cgroupFS
	root string // the pods cgroup; "" finds nothing
	// byUID is the pod cgroups by pod UID; nil until listed.
	byUID map[string]string
	// children is the child directory names of each pod cgroup listed.
	children map[string][]string
}

func newPodCgroups(fs cgroupFS, podsCgroup string) *podCgroups {
	return &podCgroups{fs: fs, root: podsCgroup}
}

// pod is the cgroup of the pod with uid, if it exists.
func (pc *podCgroups) pod(uid string) (string, bool) {
	if pc.byUID == nil {
		pc.byUID = pc.listPods()
	}
	cg, ok := pc.byUID[uid]
	return cg, ok
}

// listPods lists the pod cgroups directly below the pods cgroup
// (guaranteed pods) and below its burstable and besteffort QoS cgroups.
func (pc *podCgroups) listPods() map[string]string {
	out := map[string]string{}
	if pc.root == "" {
		return out
	}
	for _, name := range pc.fs.childDirs(pc.root) {
		if uid, ok := podUIDOf(name); ok {
			out[uid] = path.Join(pc.root, name)
			continue
		}
		if !isQOSCgroup(name) {
			continue
		}
		qos := path.Join(pc.root, name)
		for _, pod := range pc.fs.childDirs(qos) {
			if uid, ok := podUIDOf(pod); ok {
				out[uid] = path.Join(qos, pod)
			}
		}
	}
	return out
}

// isQOSCgroup recognises the burstable and besteffort cgroups: "burstable"
// with the cgroupfs driver, "kubepods-burstable.slice" with systemd.
func isQOSCgroup(name string) bool {
	for _, q := range []string{"burstable", "besteffort"} {
		if name == q || strings.HasSuffix(name, "-"+q+".slice") {
			return true
		}
	}
	return false
}

// podUIDOf is the pod UID of a pod cgroup's name: "pod<uid>" with the
// cgroupfs driver, "kubepods[-<qos>]-pod<uid>.slice" with systemd (the
// UID's dashes escaped as underscores).
func podUIDOf(name string) (string, bool) {
	if base, ok := strings.CutSuffix(name, ".slice"); ok {
		i := strings.Index(base, "-pod")
		if i < 0 || i+len("-pod") == len(base) {
			return "", false
		}
		return strings.ReplaceAll(base[i+len("-pod"):], "_", "-"), true
	}
	if uid, ok := strings.CutPrefix(name, "pod"); ok && uid != "" {
		return uid, true
	}
	return "", false
}

// child is the cgroup of a container or sandbox with the CRI ID id below
// pod cgroup podCg: the child named id (cgroupfs driver) or
// "<runtime>-<id>.scope" (systemd: cri-containerd-, crio-, docker-), but
// never CRI-O's "crio-conmon-<id>.scope" of the container's monitor.
func (pc *podCgroups) child(podCg, id string) (string, bool) {
	if pc.children == nil {
		pc.children = map[string][]string{}
	}
	names, ok := pc.children[podCg]
	if !ok {
		names = pc.fs.childDirs(podCg)
		pc.children[podCg] = names
	}
	for _, n := range names {
		if n == id || strings.HasSuffix(n, "-"+id+".scope") && !strings.Contains(n, "conmon-") {
			return path.Join(podCg, n), true
		}
	}
	return "", false
}

// childDirs lists the child directories of cgroup in the hierarchy pods
// are found in: the unified one on v2, cpuacct's (or memory's) on v1. A
// cgroup that cannot be listed has none.
func (c cgroupFS) childDirs(cgroup string) []string {
	dir := c.existingDir("cpuacct", cgroup)
	if dir == "" {
		dir = c.existingDir("memory", cgroup)
	}
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// errNoProcess is returned for a cgroup without processes.
var errNoProcess = errors.New("stats: cgroup has no process")

// firstPID is the first process of cgroup (the sandbox's pause process, in
// whose network namespace the pod's interfaces are), from its
// cgroup.procs.
func (c cgroupFS) firstPID(cgroup string) (int, error) {
	dir := c.existingDir("cpuacct", cgroup)
	if dir == "" {
		dir = c.existingDir("memory", cgroup)
	}
	if dir == "" {
		return 0, fmt.Errorf("%w: %s", errNoCgroup, cgroup)
	}
	p := filepath.Join(dir, "cgroup.procs")
	data, err := cgroupstat.ReadFile(p, nil)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("%w: %s", errNoCgroup, cgroup)
	}
	if err != nil {
		return 0, fmt.Errorf("stats: read %s: %w", p, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	if !sc.Scan() {
		return 0, fmt.Errorf("%w: %s", errNoProcess, cgroup)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("stats: %s: invalid PID %q", p, sc.Text())
	}
	return pid, nil
}
