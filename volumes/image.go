package volumes

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imagePlugin: an OCI image the runtime mounts read-only; Config.Images
// makes it present.
type imagePlugin struct{ m *Manager }

func (imagePlugin) Name() string                 { return "kubernetes.io~image" }
func (imagePlugin) CanSupport(v *v1.Volume) bool { return v.Image != nil }

func (p imagePlugin) SetUp(ctx context.Context, v Volume) (Mount, error) {
	if p.m.cfg.Images == nil {
		return Mount{}, errors.New("volume type image is not supported by this node agent (no image source)")
	}
	ref, err := p.m.cfg.Images(ctx, v.Pod, v.Spec.Image)
	if err != nil {
		return Mount{}, err
	}
	return Mount{ReadOnly: true, Image: &runtimeapi.ImageSpec{Image: ref, UserSpecifiedImage: v.Spec.Image.Reference}}, nil
}
