package volumes

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// secretPlugin: a secret's keys as files, in memory, read-only.
type secretPlugin struct{ m *Manager }

func (secretPlugin) Name() string                 { return "kubernetes.io~secret" }
func (secretPlugin) CanSupport(v *v1.Volume) bool { return v.Secret != nil }
func (secretPlugin) OwnsMounts() bool             { return true }

func (p secretPlugin) SetUp(ctx context.Context, v Volume) (Mount, error) {
	s := v.Spec.Secret
	files, err := p.m.secretPayload(ctx, v.Pod, s.SecretName, s.Items, modeOr(s.DefaultMode), optional(s.Optional))
	return p.m.setUpPayload(v, files, err, true)
}
