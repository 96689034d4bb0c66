package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/lease"
)

// AnnotationAgentID on the Node names the agent instance that runs it.
// The Lease's holderIdentity must stay the node name (the control plane and
// the conformance suite read it), so the instance is told apart here.
const AnnotationAgentID = "nodekit.io/agent-id"

// ErrNodeClaimed is returned by Run when another live agent runs the node:
// two agents would fight over the Node's status, the Lease and the pods.
var ErrNodeClaimed = errors.New("agent: the node is run by another agent")

// agentIDFile keeps the instance identity under the root directory, so an
// agent restarted on the same state (a crash, an upgrade) is the same agent
// and adopts its node at once.
const agentIDFile = "agent-id"

// loadAgentID reads <rootDir>/agent-id, creating it with a random identity
// the first time.
func loadAgentID(rootDir string) (string, error) {
	path := filepath.Join(rootDir, agentIDFile)
	if b, err := os.ReadFile(path); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("agent: read %s: %w", path, err)
	}
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("agent: agent identity: %w", err)
	}
	id := hex.EncodeToString(raw[:])
	if err := os.MkdirAll(rootDir, 0o750); err != nil {
		return "", fmt.Errorf("agent: agent identity: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o640); err != nil {
		return "", fmt.Errorf("agent: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("agent: write %s: %w", path, err)
	}
	return id, nil
}

// claimNode refuses to start beside another live agent of the same node
// name: the Node names another instance and that instance renewed the
// node's Lease within the lease duration. A Node claimed by an instance
// whose Lease expired is taken over (registration rewrites the
// annotation). When the API server cannot be asked, the agent starts: its
// node status controller keeps retrying, and the status setter below still
// notices a foreign claim.
func (a *Agent) claimNode(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	name := a.opts.NodeName
	node, err := a.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		logger.Error(err, "Cannot check whether another agent runs this node; starting", "node", name)
		return nil
	}
	owner := node.Annotations[AnnotationAgentID]
	if owner == "" || owner == a.agentID {
		return nil
	}
	l, err := a.client.CoordinationV1().Leases(lease.DefaultNamespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		logger.Info("Taking over a node whose agent left no lease", "node", name, "previousAgent", owner)
		return nil
	case err != nil:
		logger.Error(err, "Cannot read the node's lease; starting", "node", name, "otherAgent", owner)
		return nil
	}
	duration := lease.DefaultLeaseDuration
	if s := l.Spec.LeaseDurationSeconds; s != nil && *s > 0 {
		duration = time.Duration(*s) * time.Second
	}
	if rt := l.Spec.RenewTime; rt != nil {
		if age := a.opts.Clock.Since(rt.Time); age < duration {
			return fmt.Errorf("%w: node %q is claimed by agent %s (this agent is %s) whose lease was renewed %v ago; stop it first, or wait for its lease (%v) to expire",
				ErrNodeClaimed, name, owner, a.agentID, age.Round(time.Millisecond), duration)
		}
	}
	logger.Info("Taking over a node whose agent's lease expired", "node", name, "previousAgent", owner)
	return nil
}

// claimSetter watches the Node as the API server returns it: once another
// instance's identity appears (it took the node over while this agent could
// not renew its lease), this agent stops with ErrNodeClaimed instead of
// fighting it. It runs on the copy the node status controller last read or
// patched, which carries this agent's own identity from registration on.
func (a *Agent) claimSetter(ctx context.Context, _ time.Time, node *v1.Node) error {
	owner, ok := node.Annotations[AnnotationAgentID]
	if !ok || owner == a.agentID || node.ResourceVersion == "" {
		return nil
	}
	err := fmt.Errorf("%w: node %q was taken over by agent %s (this agent is %s)", ErrNodeClaimed, node.Name, owner, a.agentID)
	klog.FromContext(ctx).Error(err, "Stopping")
	if a.stop != nil {
		a.stop(err)
	}
	return err
}

// releaseNode removes this agent's identity from the Node on a clean stop,
// so that another agent (a new state directory, another host) may start at
// once instead of waiting for the Lease to expire. The patch applies only
// while the Node still names this agent. A crash leaves the claim; the same
// agent restarted on its state is still the same agent.
func (a *Agent) releaseNode(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	key := strings.ReplaceAll(AnnotationAgentID, "/", "~1")
	patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/annotations/%s","value":%q},{"op":"remove","path":"/metadata/annotations/%s"}]`,
		key, a.agentID, key)
	_, err := a.client.CoreV1().Nodes().Patch(ctx, a.opts.NodeName, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
		klog.FromContext(ctx).Error(err, "Could not release the node; another agent must wait for its lease to expire", "node", a.opts.NodeName)
	}
}
