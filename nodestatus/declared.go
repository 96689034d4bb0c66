package nodestatus

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
)

// DiscoverDeclaredFeatures returns, sorted, the features of the shared
// registry (k8s.io/component-helpers/nodedeclaredfeatures, the one the API
// server, the scheduler and the kubelet use) that a node declares: those
// whose feature gate is in implemented and whose runtime needs rt meets.
// implemented names what the host really does — a declared feature brings
// it pods (the scheduler filters on it, the API server admits updates by
// it). kubeletVersion ("v1.36.3") drops features past their last version;
// empty means DefaultKubeletVersion.
func DiscoverDeclaredFeatures(implemented []string, rt ndf.RuntimeFeatures, kubeletVersion string) ([]string, error) {
	if kubeletVersion == "" {
		kubeletVersion = DefaultKubeletVersion
	}
	v, err := version.Parse(kubeletVersion)
	if err != nil {
		return nil, fmt.Errorf("%w: DiscoverDeclaredFeatures: kubelet version %q: %v", ErrInvalidConfig, kubeletVersion, err)
	}
	gates := make(gateSet, len(implemented))
	for _, name := range implemented {
		gates[name] = true
	}
	out := ndf.DefaultFramework.DiscoverNodeFeatures(&ndf.NodeConfiguration{FeatureGates: gates, Version: v, RuntimeFeatures: rt})
	slices.Sort(out)
	return out, nil
}

// gateSet is a set of feature gate names, all enabled.
type gateSet map[string]bool

func (g gateSet) Enabled(name string) bool { return g[name] }

// DeclaredFeatures returns the setter of status.declaredFeatures: features
// as DiscoverDeclaredFeatures found them (the kubelet discovers them once,
// at start-up). Nil or empty leaves the field unset.
func DeclaredFeatures(features []string) Setter {
	features = slices.Clone(features)
	return func(_ context.Context, _ time.Time, node *v1.Node) error {
		if len(features) > 0 {
			node.Status.DeclaredFeatures = slices.Clone(features)
		}
		return nil
	}
}
