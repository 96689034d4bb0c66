package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/kubetypes"
)

// render redraws the interactive screen.
func render(d *demo, s snapshot, duration time.Duration) {
	fmt.Print("\033[H\033[2J")
	fmt.Printf("nodekit reference agent on the CRI simulator: t=%s of %s (Ctrl-C to stop)\n\n", d.elapsed().Round(time.Second), duration)
	printNode(s)
	printPods(s)
	printEvents(s, 8)
	fmt.Println("\nOUTCOMES")
	for _, o := range outcomes {
		if at, ok := d.seen[o]; ok {
			fmt.Printf("  ✓ %-32s t=%s\n", o, at.Round(time.Second))
		} else {
			fmt.Printf("  · %s\n", o)
		}
	}
	if len(d.timeline) > 0 {
		fmt.Println("\nSCRIPT\n  " + strings.Join(d.timeline, "\n  "))
	}
	for _, err := range s.errs {
		fmt.Println("\nAPI error:", err)
	}
}

func printNode(s snapshot) {
	n := s.node
	if n == nil {
		fmt.Printf("NODE %s: not registered yet\n\n", node)
		return
	}
	var conds []string
	for _, c := range n.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	renew := "-"
	if s.lease != nil {
		renew = fmt.Sprintf("%s (%s ago)", s.lease.Format("15:04:05"), time.Since(s.lease.Time).Round(time.Second))
	}
	fmt.Printf("NODE %s  %s\n  capacity cpu=%s memory=%s pods=%s  runtime %s\n  lease renewed %s\n\n", n.Name, strings.Join(conds, " "),
		n.Status.Capacity.Cpu(), n.Status.Capacity.Memory(), n.Status.Capacity.Pods(), n.Status.NodeInfo.ContainerRuntimeVersion, renew)
}

func printPods(s snapshot) {
	fmt.Printf("%-31s %-10s %-6s %-9s %-11s %s\n", "POD", "PHASE", "READY", "RESTARTS", "IP", "STATE")
	for _, p := range s.pods {
		ready, restarts, state := 0, int32(0), ""
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Ready {
				ready++
			}
			restarts += cs.RestartCount
			state = containerState(cs.State)
		}
		if p.Status.Reason != "" {
			state = p.Status.Reason
		}
		name := p.Name
		if _, ok := p.Annotations[kubetypes.ConfigMirrorAnnotationKey]; ok {
			name += " (mirror)"
		}
		fmt.Printf("%-31s %-10s %d/%-4d %-9d %-11s %s\n", name, p.Status.Phase, ready, len(p.Spec.Containers), restarts, p.Status.PodIP, state)
	}
}

func containerState(st v1.ContainerState) string {
	switch {
	case st.Waiting != nil:
		return st.Waiting.Reason
	case st.Terminated != nil:
		return st.Terminated.Reason
	case st.Running != nil:
		return "Running"
	}
	return ""
}

// printEvents prints the newest n events, the reason in full.
func printEvents(s snapshot, n int) {
	if len(s.events) == 0 {
		return
	}
	fmt.Println("\nRECENT EVENTS (newest first)")
	for i, e := range s.events {
		if i == n {
			break
		}
		fmt.Printf("  %-4s %-7s %-22s %-18s %s\n", ago(eventTime(e)), e.Type, e.Reason,
			trim(e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name, 18), trim(e.Message, 90))
	}
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return time.Since(t).Round(time.Second).String()
}

// eventTime is when an event last happened, whichever API field carries it.
func eventTime(e v1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

func newestFirst(evs []v1.Event) []v1.Event {
	sort.SliceStable(evs, func(i, j int) bool { return eventTime(evs[i]).After(eventTime(evs[j])) })
	return evs
}

func trim(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
