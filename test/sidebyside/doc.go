// Package sidebyside benchmarks nodekit blocks against upstream kubelet
// packages (k8s.io/kubernetes v1.36.3) in the same process, on the same
// simulated runtime or loopback servers, so the figures are ratios measured
// in one run. It has no tests of its own; run `go test -bench . -benchmem`.
package sidebyside
