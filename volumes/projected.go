package volumes

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// projectedPlugin: configMaps, secrets, downward API items and service
// account tokens merged into one directory, in memory, read-only.
type projectedPlugin struct{ m *Manager }

func (projectedPlugin) Name() string                 { return "kubernetes.io~projected" }
func (projectedPlugin) CanSupport(v *v1.Volume) bool { return v.Projected != nil }
func (projectedPlugin) OwnsMounts() bool             { return true }

func (p projectedPlugin) SetUp(ctx context.Context, v Volume) (Mount, error) {
	files, err := p.m.projectedPayload(ctx, v.Pod, v.Spec.Projected)
	return p.m.setUpPayload(v, files, err, true)
}
