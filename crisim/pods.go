package crisim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// AnnotationScriptPrefix scripts a container from its pod: the annotation
// "sim.nodekit.io/<container>" holds space-separated settings, e.g.
// "exit-after=5s exit-code=1" (a container that crashes after 5s) or
// "exec-exit-code=1" (every exec in it, exec probes among them, fails).
const AnnotationScriptPrefix = "sim.nodekit.io/"

// AnnotationLogsPrefix gives a container output from its pod: the
// annotation "logs.sim.nodekit.io/<container>" holds the lines it prints
// on stdout each time it starts (one per line of the value).
const AnnotationLogsPrefix = "logs.sim.nodekit.io/"

// ScriptFromPod scripts container c of pod from the pod's annotations
// (AnnotationScriptPrefix, AnnotationLogsPrefix) the first time it is
// called for that pod UID and container; the simulator keeps the rules
// for later instances. A host calls it before creating each container (it
// fits podsyncer.Config.BeforeCreate). A malformed script is an error and
// scripts nothing.
func (s *Sim) ScriptFromPod(pod *v1.Pod, c *v1.Container) error {
	key := string(pod.UID) + "/" + c.Name
	s.mu.Lock()
	if s.scriptedPods == nil {
		s.scriptedPods = map[string]bool{}
	}
	first := !s.scriptedPods[key]
	s.scriptedPods[key] = true
	s.mu.Unlock()
	if !first {
		return nil
	}
	spec, scripted := pod.Annotations[AnnotationScriptPrefix+c.Name]
	sc, ex, err := ParseScript(spec)
	if err != nil {
		s.mu.Lock()
		delete(s.scriptedPods, key) // reported again at the next attempt
		s.mu.Unlock()
		return fmt.Errorf("annotation %s%s: %w", AnnotationScriptPrefix, c.Name, err)
	}
	m := Match{Pod: pod.Name, Namespace: pod.Namespace, Container: c.Name}
	if text, ok := pod.Annotations[AnnotationLogsPrefix+c.Name]; ok {
		s.ScriptLogs(m, strings.Split(strings.TrimRight(text, "\n"), "\n")...)
	}
	if scripted {
		s.Script(m, sc)
	}
	if ex != nil {
		s.ScriptExec(m, nil, *ex)
	}
	return nil
}

// ParseScript parses the settings of an AnnotationScriptPrefix
// annotation: exit-after (a duration), exit-code and exec-exit-code
// (integers). The exec result is nil unless exec-exit-code is set.
func ParseScript(spec string) (Script, *ExecResult, error) {
	var sc Script
	var ex *ExecResult
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
			ex = &ExecResult{ExitCode: int32(n), Stdout: "scripted by " + AnnotationScriptPrefix}
		default:
			err = fmt.Errorf("unknown setting %q (want exit-after, exit-code or exec-exit-code)", k)
		}
		if err != nil {
			return Script{}, nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return sc, ex, nil
}
