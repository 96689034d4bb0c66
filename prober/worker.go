package prober

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/kubetypes"
)

// worker is one probe of one container. It has no goroutine: the schedule
// holds it until its next run and a pool goroutine (or RunOnce) runs it.
type worker struct {
	m         *Manager
	key       probeKey
	pod       *v1.Pod       // as given to AddPod; read-only
	container *v1.Container // read-only
	init      bool          // a sidecar (restartable init container)
	spec      probeSpec
	specErr   error // the probe is invalid; it only reports this error
	initial   Result
	ref       *v1.ObjectReference // events' subject

	// Probe state, touched only by the one goroutine running the probe.
	containerID string
	lastResult  Result
	resultRun   int
	onHold      bool
	reqHost     string // host the cached HTTP request was rendered for
	req         []byte

	// Schedule state, guarded by Manager.mu.
	next      time.Time // when it runs next
	slot      time.Time // its periodic slot; next is earlier after a trigger
	index     int
	running   bool
	stopped   bool
	triggered bool
}

func newWorker(m *Manager, key probeKey, pod *v1.Pod, c *v1.Container, init bool, p *v1.Probe) *worker {
	spec, err := compileProbe(key.probe, p, c)
	w := &worker{m: m, key: key, pod: pod, container: c, init: init, spec: spec, specErr: err, index: -1}
	switch key.probe {
	case Liveness:
		w.initial = Success
	case Readiness:
		w.initial = Failure
	default:
		w.initial = Unknown
	}
	field := "spec.containers{" + c.Name + "}"
	if init {
		field = "spec.initContainers{" + c.Name + "}"
	}
	w.ref = &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
		UID: pod.UID, ResourceVersion: pod.ResourceVersion, FieldPath: field}
	return w
}

func (w *worker) set(r Result) {
	w.m.results[w.key.probe].set(w.containerID, r, w.key.pod)
}

// doProbe runs the probe once against the latest status of its container
// and records the result. It returns false when the worker should stop for
// good: the pod finished, the container exited and will not restart, or
// the pod is being deleted (liveness and startup).
func (w *worker) doProbe(ctx context.Context, now time.Time) bool {
	t := w.key.probe
	status := w.m.podStatus(w.key.pod)
	if status == nil {
		return true // no status yet
	}
	if status.phase == v1.PodFailed || status.phase == v1.PodSucceeded {
		return false
	}
	c, ok := status.find(w.key.container)
	if !ok {
		return true // not created yet, or removed
	}
	if c.id != w.containerID {
		if w.containerID != "" {
			w.m.results[t].remove(w.containerID)
		}
		w.containerID = c.id
		// A container that survived a kubelet restart keeps its state
		// rather than falling back to the initial result.
		survived := c.running && !c.startedAt.IsZero() && c.startedAt.Before(w.m.start.Add(-restartGrace))
		if w.init && t == Startup && c.started {
			w.set(Success)
		}
		if !survived {
			w.set(w.initial)
		}
		w.onHold, w.lastResult, w.resultRun = false, Unknown, 0
	}
	if w.onHold {
		return true
	}
	if !c.running {
		w.set(Failure)
		if !c.terminated {
			return true
		}
		return w.init || status.restartingAll || kubetypes.ContainerShouldRestart(w.container, &w.pod.Spec, c.exitCode)
	}
	if status.deleting && (t == Liveness || t == Startup) {
		w.set(Success) // a quiet shutdown
		return false
	}
	if inInitialDelay(now, c.startedAt, w.spec.initialDelay) {
		return true
	}
	if c.started == (t == Startup) {
		return true // startup probes stop once started; the others wait for it
	}
	r, ok := w.probe(ctx, c, status.ip)
	if !ok {
		return true
	}
	var publish bool
	w.lastResult, w.resultRun, publish = applyThreshold(w.lastResult, w.resultRun, r, w.spec.success, w.spec.failure)
	if !publish {
		return true
	}
	w.set(r)
	if holdsAfter(t, r) {
		w.onHold, w.resultRun = true, 0
	}
	return true
}

// probe runs the handler, retrying errors like upstream, records the event
// and metric, and returns the result; false means the result is discarded
// (an error, or ctx ended).
func (w *worker) probe(ctx context.Context, c containerState, podIP string) (Result, bool) {
	start := w.m.cfg.Clock.Now()
	var (
		out    outcome
		output string
		err    = w.specErr
	)
	if err == nil {
		for range maxRetries {
			out, output, err = w.run(ctx, c, podIP)
			if err == nil || ctx.Err() != nil {
				break
			}
		}
	}
	if ctx.Err() != nil {
		return Unknown, false // shutting down: not the target's fault
	}
	t := w.key.probe
	logger := klog.FromContext(ctx).WithValues("probeType", t, "pod", klog.KObj(w.pod), "podUID", w.pod.UID, "containerName", w.key.container)
	if err != nil {
		logger.V(1).Info("Probe errored", "err", err)
		w.event(v1.EventTypeWarning, "Unhealthy", fmt.Sprintf("%s probe errored and resulted in unknown state: %s", t, err))
		w.m.metrics.observe(w, Unknown, 0)
		return Unknown, false
	}
	var r Result
	switch out {
	case success:
		logger.V(3).Info("Probe succeeded")
		r = Success
	case warning:
		logger.V(3).Info("Probe succeeded with a warning", "output", output)
		w.event(v1.EventTypeWarning, "ProbeWarning", fmt.Sprintf("%s probe warning: %s", t, output))
		r = Success
	case failure:
		logger.V(1).Info("Probe failed", "output", output)
		w.event(v1.EventTypeWarning, "Unhealthy", fmt.Sprintf("%s probe failed: %s", t, output))
		r = Failure
	default:
		logger.V(1).Info("Probe unknown without error")
		r = Failure
	}
	w.m.metrics.observe(w, r, w.m.cfg.Clock.Since(start).Seconds())
	return r, true
}

// run calls the handler once with the probe's timeout.
func (w *worker) run(ctx context.Context, c containerState, podIP string) (outcome, string, error) {
	n := w.m.net
	ctx, release := n.withTimeout(ctx, w.spec.timeout)
	defer release()
	s := &w.spec
	switch s.kind {
	case kindExec:
		_, id, _ := strings.Cut(c.id, "://")
		return probeExec(ctx, w.m.cfg.Runner, id, s.cmd, s.timeout)
	case kindGRPC:
		if podIP == "" {
			return unknown, "", fmt.Errorf("pod IP unknown")
		}
		out, msg := n.probeGRPC(ctx, joinHostPort(podIP, s.port), s.service, s.timeout)
		return out, msg, nil
	}
	host := s.host
	if host == "" {
		host = podIP
	}
	if host == "" {
		return unknown, "", fmt.Errorf("pod IP unknown")
	}
	if s.kind == kindTCP {
		out, msg := n.probeTCP(ctx, joinHostPort(host, s.port))
		return out, msg, nil
	}
	if host != w.reqHost {
		w.reqHost, w.req = host, nil
	}
	out, msg, req := n.probeHTTP(ctx, s.http, host, s.port, s.timeout, w.req)
	w.req = req
	return out, msg, nil
}

func (w *worker) event(eventType, reason, message string) {
	if r := w.m.cfg.Recorder; r != nil {
		r.Event(w.ref, eventType, reason, message)
	}
}
