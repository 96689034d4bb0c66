package volumes

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// hostPathPlugin: a path of the node, checked (or created) as its type
// asks.
type hostPathPlugin struct{}

func (hostPathPlugin) Name() string                 { return "" }
func (hostPathPlugin) CanSupport(v *v1.Volume) bool { return v.HostPath != nil }

func (hostPathPlugin) SetUp(_ context.Context, v Volume) (Mount, error) {
	return Mount{HostPath: v.Spec.HostPath.Path}, checkHostPath(v.Spec.HostPath)
}
