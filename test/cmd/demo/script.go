package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodekit/nodekit/containerid"
	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/kubetypes"
)

// The outcomes the README promises, in the order they usually happen.
const (
	outMirror   = "mirror pod"
	outJob      = "job completed"
	outLiveness = "liveness restart"
	outEviction = "eviction under memory pressure"
	outDeletion = "deletion"
)

var outcomes = []string{outMirror, outJob, outLiveness, outEviction, outDeletion}

// demo is the script: it acts on the simulated machine only once what it
// acts on is observed through the API, and records each outcome when the
// control plane shows it.
type demo struct {
	admin kubernetes.Interface
	sim   *crisim.Sim
	start time.Time
	check bool // no pacing, no screen: a timeline for CI

	timeline []string
	seen     map[string]time.Duration // outcome → when it was observed

	livenessArmed  bool
	restartsBefore int32
	pressureArmed  bool
	evicted        bool
	deleteSent     bool
}

// snapshot is what the control plane shows at one instant.
type snapshot struct {
	node   *v1.Node
	lease  *metav1.MicroTime
	pods   []v1.Pod
	events []v1.Event
	errs   []error
}

func (d *demo) elapsed() time.Duration { return time.Since(d.start) }

func (d *demo) note(format string, args ...any) {
	line := fmt.Sprintf("t=%-4s ", d.elapsed().Round(time.Second)) + fmt.Sprintf(format, args...)
	d.timeline = append(d.timeline, line)
	if d.check {
		fmt.Println(line)
	}
}

func (d *demo) outcome(name, detail string) {
	if _, ok := d.seen[name]; ok {
		return
	}
	d.seen[name] = d.elapsed()
	d.note("✓ %s: %s", name, detail)
}

// after paces the interactive show so a viewer sees each state before the
// script changes it; --check does not wait.
func (d *demo) after(at time.Duration) bool { return d.check || d.elapsed() >= at }

// watch observes, acts and prints until duration has passed, ctx is done,
// or (with --check) every outcome was seen.
func (d *demo) watch(ctx context.Context, duration time.Duration) error {
	d.seen = map[string]time.Duration{}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last snapshot
	for {
		last = d.observe(ctx)
		d.step(ctx, last)
		if !d.check {
			render(d, last, duration)
		}
		if d.check && len(d.seen) == len(outcomes) {
			fmt.Printf("all %d outcomes seen in %s\n", len(outcomes), d.elapsed().Round(time.Second))
			return nil
		}
		if d.elapsed() >= duration {
			return d.verdict(last)
		}
		select {
		case <-ctx.Done():
			if d.check {
				return errors.New("interrupted")
			}
			return nil
		case <-tick.C:
		}
	}
}

// verdict is the end of a run: in --check mode every outcome must have
// been seen.
func (d *demo) verdict(last snapshot) error {
	if !d.check {
		return nil
	}
	var missing []string
	for _, o := range outcomes {
		if _, ok := d.seen[o]; !ok {
			missing = append(missing, o)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	fmt.Println("\nwhat the control plane showed last:")
	printPods(last)
	printEvents(last, 20)
	return fmt.Errorf("not seen within %s: %s", d.elapsed().Round(time.Second), strings.Join(missing, ", "))
}

func (d *demo) observe(ctx context.Context) snapshot {
	var s snapshot
	n, err := d.admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err == nil {
		s.node = n
	} else if !apierrors.IsNotFound(err) {
		s.errs = append(s.errs, err)
	}
	if l, err := d.admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, node, metav1.GetOptions{}); err == nil {
		s.lease = l.Spec.RenewTime
	}
	if pods, err := d.admin.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err == nil {
		s.pods = pods.Items
	} else {
		s.errs = append(s.errs, err)
	}
	if evs, err := d.admin.CoreV1().Events("").List(ctx, metav1.ListOptions{}); err == nil {
		s.events = newestFirst(evs.Items)
	} else {
		s.errs = append(s.errs, err)
	}
	return s
}

// step advances the script on what s shows.
func (d *demo) step(ctx context.Context, s snapshot) {
	if p := s.pod("static-web-" + node); p != nil && p.Annotations[kubetypes.ConfigMirrorAnnotationKey] != "" && p.Status.Phase == v1.PodRunning {
		d.outcome(outMirror, "static-web-"+node+" from the manifest directory is Running in the API")
	}

	if p := s.pod("job"); p != nil && p.Status.Phase == v1.PodSucceeded {
		d.outcome(outJob, "job's container exited 0: phase Succeeded")
	}

	if p := s.pod("web"); p != nil {
		cs := containerStatus(p, "web")
		_, restarted := d.seen[outLiveness]
		switch {
		case !d.livenessArmed && cs != nil && cs.Ready && d.after(15*time.Second):
			d.livenessArmed, d.restartsBefore = true, cs.RestartCount
			d.sim.ScriptExec(crisim.Match{Pod: "web", Container: "web"}, []string{"cat", "/healthy"}, crisim.ExecResult{ExitCode: 1, Stderr: "cat: can't open '/healthy': No such file or directory"})
			d.note("web is Ready; its liveness probe (exec cat /healthy) now fails")
		case d.livenessArmed && cs != nil && cs.RestartCount > d.restartsBefore && !restarted:
			d.sim.ScriptExec(crisim.Match{Pod: "web", Container: "web"}, []string{"cat", "/healthy"}, crisim.ExecResult{})
			d.outcome(outLiveness, fmt.Sprintf("web's container was killed and restarted (restarts %d); liveness healthy again", cs.RestartCount))
		}
	}

	if p := s.pod("besteffort"); p != nil {
		cs := containerStatus(p, "hog")
		if !d.pressureArmed && cs != nil && cs.State.Running != nil && d.after(25*time.Second) {
			if id, err := containerid.Parse(cs.ContainerID); err == nil {
				if err := d.sim.SetContainerStats(id.ID, crisim.ContainerUsage{MemoryWorkingSetBytes: 3900 << 20, MemoryUsageBytes: 3900 << 20}); err == nil {
					d.pressureArmed = true
					d.note("besteffort now uses 3.8Gi of the node's 4Gi (eviction threshold memory.available<500Mi)")
				}
			}
		}
		if p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted" {
			d.evicted = true
		}
	}
	if d.evicted && s.condition(v1.NodeMemoryPressure) == v1.ConditionTrue {
		d.outcome(outEviction, "besteffort evicted (phase Failed, reason Evicted), node MemoryPressure=True")
	}

	if _, ok := d.seen[outJob]; ok && !d.deleteSent && d.after(40*time.Second) {
		if err := d.admin.CoreV1().Pods("default").Delete(ctx, "job", metav1.DeleteOptions{}); err == nil || apierrors.IsNotFound(err) {
			d.deleteSent = true
			d.note("kubectl delete pod job")
		}
	}
	if d.deleteSent && s.pod("job") == nil {
		d.outcome(outDeletion, "the job pod is gone from the API (the agent confirmed its containers stopped)")
	}
}

func (s snapshot) pod(name string) *v1.Pod {
	for i := range s.pods {
		if s.pods[i].Namespace == "default" && s.pods[i].Name == name {
			return &s.pods[i]
		}
	}
	return nil
}

func (s snapshot) condition(t v1.NodeConditionType) v1.ConditionStatus {
	if s.node == nil {
		return ""
	}
	for _, c := range s.node.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func containerStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}
