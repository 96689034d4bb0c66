package virtualnode

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// AnnotationResourceMetricsPath is the Node annotation metrics-server
// (v0.7 and later) reads for the path of a node's resource metrics.
const AnnotationResourceMetricsPath = "metrics.k8s.io/resource-metrics-path"

// resourceMetricsPath is where the agent's kubelet API serves a node's
// resource metrics.
func resourceMetricsPath(node string) string { return "/metrics/nodes/" + node + "/metrics/resource" }

// nodeSummary is the stats summary of a managed node: its running pods'
// stats from the StatsProvider, and their sums as the node's CPU and
// memory; nil for a node this agent does not run.
func (a *Agent) nodeSummary(ctx context.Context, node string) (*statsapi.Summary, error) {
	if _, ok := a.managed[node]; !ok {
		return nil, nil
	}
	sp := a.cfg.Provider.(StatsProvider)
	now := metav1.NewTime(a.cfg.Clock.Now())
	var nanoCores, coreNanos, workingSet uint64
	sum := &statsapi.Summary{Node: statsapi.NodeStats{NodeName: node, StartTime: metav1.NewTime(a.started)}}
	for _, e := range a.cache.podsOn(node) {
		if e.podPhase() != v1.PodRunning {
			continue
		}
		pod := a.cache.decode(e)
		if pod == nil {
			continue
		}
		ps, err := sp.PodStats(ctx, pod)
		if err != nil {
			return nil, fmt.Errorf("virtualnode: stats of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		if ps == nil {
			continue
		}
		ps.PodRef = statsapi.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID)}
		if c := ps.CPU; c != nil {
			nanoCores += deref(c.UsageNanoCores)
			coreNanos += deref(c.UsageCoreNanoSeconds)
		}
		if m := ps.Memory; m != nil {
			workingSet += deref(m.WorkingSetBytes)
		}
		sum.Pods = append(sum.Pods, *ps)
	}
	sum.Node.CPU = &statsapi.CPUStats{Time: now, UsageNanoCores: &nanoCores, UsageCoreNanoSeconds: &coreNanos}
	sum.Node.Memory = &statsapi.MemoryStats{Time: now, WorkingSetBytes: &workingSet}
	return sum, nil
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}
