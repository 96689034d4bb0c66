package agent

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/crisim"
)

// AnnotationSimPrefix scripts a container in simulator mode: the annotation
// "sim.nodekit.io/<container>" holds space-separated settings, e.g.
// "exit-after=5s exit-code=1" (a container that crashes after 5s) or
// "exec-exit-code=1" (every exec probe fails). Ignored with a real runtime.
const AnnotationSimPrefix = "sim.nodekit.io/"

// AnnotationSimLogsPrefix gives a container output in simulator mode: the
// annotation "logs.sim.nodekit.io/<container>" holds the lines it prints
// on stdout each time it starts (one per line of the value), served by
// /containerLogs and kubectl logs like a real container's. Ignored with a
// real runtime.
const AnnotationSimLogsPrefix = "logs.sim.nodekit.io/"

// simScripter turns pod annotations into crisim scripts, once per pod UID
// and container (the simulator keeps its rules; a restart needs none).
func simScripter(sim *crisim.Sim) func(pod *v1.Pod, c *v1.Container) {
	var mu sync.Mutex
	done := map[string]bool{}
	return func(pod *v1.Pod, c *v1.Container) {
		key := string(pod.UID) + "/" + c.Name
		mu.Lock()
		first := !done[key]
		done[key] = true
		mu.Unlock()
		if !first {
			return
		}
		if text, ok := pod.Annotations[AnnotationSimLogsPrefix+c.Name]; ok {
			sim.ScriptLogs(crisim.Match{Pod: pod.Name, Namespace: pod.Namespace, Container: c.Name},
				strings.Split(strings.TrimRight(text, "\n"), "\n")...)
		}
		spec, ok := pod.Annotations[AnnotationSimPrefix+c.Name]
		if !ok {
			return
		}
		sc, ex, err := parseSimSpec(spec)
		if err != nil {
			return // validated when the pod was admitted
		}
		m := crisim.Match{Pod: pod.Name, Namespace: pod.Namespace, Container: c.Name}
		sim.Script(m, sc)
		if ex != nil {
			sim.ScriptExec(m, nil, *ex)
		}
	}
}

func parseSimSpec(spec string) (crisim.Script, *crisim.ExecResult, error) {
	var sc crisim.Script
	var ex *crisim.ExecResult
	for _, f := range strings.Fields(spec) {
		k, v, _ := strings.Cut(f, "=")
		var err error
		switch k {
		case "exit-after":
			sc.ExitAfter, err = time.ParseDuration(v)
		case "exit-code":
			var n int
			n, err = strconv.Atoi(v)
			sc.ExitCode = int32(n)
		case "exec-exit-code":
			var n int
			n, err = strconv.Atoi(v)
			ex = &crisim.ExecResult{ExitCode: int32(n), Stdout: "scripted by " + AnnotationSimPrefix}
		default:
			err = fmt.Errorf("unknown setting %q", k)
		}
		if err != nil {
			return sc, nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return sc, ex, nil
}
