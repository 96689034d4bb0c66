// Package examples holds runnable programs that compose nodekit's blocks
// into node agents: examples/kubelet is the reference agent (every block,
// wired), examples/providerloop the smallest CRI agent, and
// examples/virtualnodes many virtual nodes in one process.
package examples
