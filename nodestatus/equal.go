package nodestatus

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// statusEqual compares two node statuses field by field, conditions
// aside, with equality.Semantic's meaning (quantities by value, an empty
// list equal to a missing one). Every status pass of every node runs it, so
// the common fields are compared directly, without reflection or
// encoding; the rare pointer fields go to equality.Semantic.
// TestStatusEqualKnowsEveryField fails when the API adds a field to
// NodeStatus that this does not compare.
func statusEqual(a, b *v1.NodeStatus) bool {
	return resourcesEqual(a.Capacity, b.Capacity) &&
		resourcesEqual(a.Allocatable, b.Allocatable) &&
		a.Phase == b.Phase &&
		slices.Equal(a.Addresses, b.Addresses) &&
		a.DaemonEndpoints == b.DaemonEndpoints &&
		systemInfoEqual(&a.NodeInfo, &b.NodeInfo) &&
		slices.EqualFunc(a.Images, b.Images, func(x, y v1.ContainerImage) bool {
			return x.SizeBytes == y.SizeBytes && slices.Equal(x.Names, y.Names)
		}) &&
		slices.Equal(a.VolumesInUse, b.VolumesInUse) &&
		slices.Equal(a.VolumesAttached, b.VolumesAttached) &&
		semanticEqual(a.Config, b.Config) &&
		slices.EqualFunc(a.RuntimeHandlers, b.RuntimeHandlers, func(x, y v1.NodeRuntimeHandler) bool {
			return x.Name == y.Name && semanticEqual(x.Features, y.Features)
		}) &&
		semanticEqual(a.Features, b.Features) &&
		slices.Equal(a.DeclaredFeatures, b.DeclaredFeatures)
}

// resourcesEqual compares two resource lists by value.
func resourcesEqual(a, b v1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}

// systemInfoEqual compares the strings directly and Swap by what it
// points to.
func systemInfoEqual(a, b *v1.NodeSystemInfo) bool {
	x, y := *a, *b
	x.Swap, y.Swap = nil, nil
	return x == y && semanticEqual(a.Swap, b.Swap)
}

// semanticEqual compares two optional fields: both missing is the common
// case and costs no reflection.
func semanticEqual[T any](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return equality.Semantic.DeepEqual(a, b)
}
