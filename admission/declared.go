package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
)

// ReasonPodFeatureUnsupported is the kubelet's reason for a pod that needs
// a node feature the node does not declare.
const ReasonPodFeatureUnsupported = "PodFeatureUnsupported"

// DeclaredFeatures returns the kubelet's node-declared-features admit
// handler: a pod that needs a feature (as the shared registry,
// k8s.io/component-helpers/nodedeclaredfeatures, infers it for scheduling)
// missing from declared — the node's status.declaredFeatures, e.g. from
// nodestatus.DiscoverDeclaredFeatures — is refused with
// PodFeatureUnsupported, naming what is missing. kubeletVersion is the
// node's ("v1.36.3"); features past their last version are not required.
func DeclaredFeatures(declared []string, kubeletVersion string) (Handler, error) {
	v, err := version.Parse(kubeletVersion)
	if err != nil {
		return nil, fmt.Errorf("admission: DeclaredFeatures: kubelet version %q: %w", kubeletVersion, err)
	}
	fw := ndf.DefaultFramework
	set, err := fw.MapSorted(slices.Sorted(slices.Values(declared)))
	if err != nil {
		return nil, fmt.Errorf("admission: DeclaredFeatures: %w", err)
	}
	return HandlerFunc(func(_ context.Context, attrs Attributes) Result {
		pod := attrs.Pod
		reqs, err := fw.InferForPodScheduling(&ndf.PodInfo{Spec: &pod.Spec, Status: &pod.Status}, v)
		if err != nil {
			return Result{Reason: ReasonPodFeatureUnsupported, Message: fmt.Sprintf("Failed to infer pod's feature requirements: %v", err)}
		}
		if reqs.IsEmpty() {
			return Result{Admit: true}
		}
		match, err := fw.MatchNodeFeatureSet(reqs, set)
		if err != nil {
			return Result{Reason: ReasonPodFeatureUnsupported, Message: fmt.Sprintf("Failed to match pod's feature requirements against the node: %v", err)}
		}
		if !match.IsMatch {
			return Result{Reason: ReasonPodFeatureUnsupported,
				Message: "Pod requires node features that are not available: " + strings.Join(match.UnsatisfiedRequirements, ", ")}
		}
		return Result{Admit: true}
	}), nil
}
