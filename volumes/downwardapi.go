package volumes

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// downwardAPIPlugin: pod fields and container resources as files, in
// memory, read-only.
type downwardAPIPlugin struct{ m *Manager }

func (downwardAPIPlugin) Name() string                 { return "kubernetes.io~downward-api" }
func (downwardAPIPlugin) CanSupport(v *v1.Volume) bool { return v.DownwardAPI != nil }
func (downwardAPIPlugin) OwnsMounts() bool             { return true }

func (p downwardAPIPlugin) SetUp(_ context.Context, v Volume) (Mount, error) {
	s := v.Spec.DownwardAPI
	files, err := p.m.downwardPayload(v.Pod, s.Items, modeOr(s.DefaultMode))
	return p.m.setUpPayload(v, files, err, true)
}
