package volumes

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// configMapPlugin: a configMap's keys as files, on disk, read-only.
type configMapPlugin struct{ m *Manager }

func (configMapPlugin) Name() string                 { return "kubernetes.io~configmap" }
func (configMapPlugin) CanSupport(v *v1.Volume) bool { return v.ConfigMap != nil }

func (p configMapPlugin) SetUp(ctx context.Context, v Volume) (Mount, error) {
	s := v.Spec.ConfigMap
	files, err := p.m.configMapPayload(ctx, v.Pod, s.Name, s.Items, modeOr(s.DefaultMode), optional(s.Optional))
	return p.m.setUpPayload(v, files, err, false)
}
