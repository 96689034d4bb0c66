// Package evictiontest is a fake of the eviction manager's outputs for
// tests of the blocks that read them: node pressure a test sets by hand,
// the pressure conditions nodestatus reports from it, and admission of
// new pods under it by the eviction manager's own rule (eviction.AdmitPod).
package evictiontest

import (
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit/nodekit/eviction"
	"github.com/nodekit/nodekit/kubetypes"
)

// Pressure is a node's pressure set by a test, safe for concurrent use.
// The zero value has none.
type Pressure struct {
	mu         sync.Mutex
	conditions []v1.NodeConditionType
}

// Set replaces the node's pressure conditions (v1.NodeMemoryPressure,
// v1.NodeDiskPressure, v1.NodePIDPressure).
func (p *Pressure) Set(conditions ...v1.NodeConditionType) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conditions = slices.Clone(conditions)
}

// Conditions are the pressure conditions set.
func (p *Pressure) Conditions() []v1.NodeConditionType {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.conditions)
}

// IsUnderMemoryPressure, IsUnderDiskPressure and IsUnderPIDPressure are
// what nodestatus' pressure setters ask.
func (p *Pressure) IsUnderMemoryPressure() bool { return p.has(v1.NodeMemoryPressure) }

// IsUnderDiskPressure reports v1.NodeDiskPressure.
func (p *Pressure) IsUnderDiskPressure() bool { return p.has(v1.NodeDiskPressure) }

// IsUnderPIDPressure reports v1.NodePIDPressure.
func (p *Pressure) IsUnderPIDPressure() bool { return p.has(v1.NodePIDPressure) }

// Admit decides on a new pod as the eviction manager does under the
// conditions set.
func (p *Pressure) Admit(pod *v1.Pod) kubetypes.AdmitResult {
	return eviction.AdmitPod(p.Conditions(), pod)
}

func (p *Pressure) has(c v1.NodeConditionType) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.conditions, c)
}
