// Package nodestatustest is a fake of the registered Node for tests of
// the blocks that read it (podhandler.NodeGetter, admission's node
// function): a Node a test sets, safe for concurrent use.
package nodestatustest

import (
	"sync"

	v1 "k8s.io/api/core/v1"
)

// Node holds the Node as a registered node status controller would
// report it; the zero value is "not registered yet" (Node returns nil).
type Node struct {
	mu   sync.Mutex
	node *v1.Node
}

// Set replaces the Node (nil: not registered).
func (n *Node) Set(node *v1.Node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.node = node.DeepCopy()
}

// Node is a copy of the Node set, nil before one is.
func (n *Node) Node() *v1.Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.node.DeepCopy()
}
