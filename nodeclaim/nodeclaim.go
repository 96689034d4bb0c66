package nodeclaim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/clockctx"
)

// ErrInvalidConfig wraps every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("nodeclaim: invalid config")

// AnnotationAgentID on the Node names the agent instance that runs it.
// The Lease's holderIdentity must stay the node name (the control plane
// reads it), so instances are told apart here.
const AnnotationAgentID = "nodekit.io/agent-id"

// ErrNodeClaimed: another live agent runs the node. Two agents would
// fight over the Node's status, the Lease and the pods.
var ErrNodeClaimed = errors.New("the node is run by another agent")

// Upstream-aligned defaults.
const (
	// DefaultLeaseNamespace holds node Leases.
	DefaultLeaseNamespace = "kube-node-lease"
	// DefaultLeaseDuration is the kubelet's nodeLeaseDurationSeconds,
	// used when a Lease does not say.
	DefaultLeaseDuration = 40 * time.Second
	// IDFile is the file under the root directory holding the identity.
	IDFile = "agent-id"
	// releaseTimeout bounds Release.
	releaseTimeout = 5 * time.Second
)

// LoadID reads the agent identity from <rootDir>/agent-id, creating it
// with a random identity the first time: an agent restarted on the same
// state (a crash, an upgrade) is the same agent and adopts its node at
// once.
func LoadID(rootDir string) (string, error) {
	path := filepath.Join(rootDir, IDFile)
	if b, err := os.ReadFile(path); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("nodeclaim: read %s: %w", path, err)
	}
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("nodeclaim: agent identity: %w", err)
	}
	id := hex.EncodeToString(raw[:])
	if err := os.MkdirAll(rootDir, 0o750); err != nil {
		return "", fmt.Errorf("nodeclaim: agent identity: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o640); err != nil {
		return "", fmt.Errorf("nodeclaim: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("nodeclaim: write %s: %w", path, err)
	}
	return id, nil
}

// Config configures a Claim; Nodes, Leases, NodeName and ID are required.
type Config struct {
	// Nodes reads and patches the Node (the node identity may).
	Nodes typedcorev1.NodesGetter
	// Leases reads the node's Lease.
	Leases coordinationv1.LeasesGetter
	// NodeName is the node this agent runs.
	NodeName string
	// ID is this agent instance (LoadID).
	ID string
	// LeaseNamespace is where node Leases live; empty means
	// DefaultLeaseNamespace.
	LeaseNamespace string
	// Clock judges lease ages and bounds Release; nil means the real
	// clock.
	Clock clock.WithTicker
}

// Claim keeps one live agent per node name. Check at start refuses to run
// beside a live agent; Setter, a nodestatus setter, notices a takeover
// while running (Done is closed then); Release on a clean stop lets
// another agent start at once.
type Claim struct {
	cfg  Config
	once sync.Once
	done chan struct{}
	err  error
}

// New validates cfg and returns a Claim; no I/O.
func New(cfg Config) (*Claim, error) {
	if cfg.Nodes == nil || cfg.Leases == nil || cfg.NodeName == "" || cfg.ID == "" {
		return nil, fmt.Errorf("%w: Nodes, Leases, NodeName and ID are required", ErrInvalidConfig)
	}
	if cfg.LeaseNamespace == "" {
		cfg.LeaseNamespace = DefaultLeaseNamespace
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Claim{cfg: cfg, done: make(chan struct{})}, nil
}

// Annotations are what registration writes on the Node.
func (c *Claim) Annotations() map[string]string {
	return map[string]string{AnnotationAgentID: c.cfg.ID}
}

// Check refuses (ErrNodeClaimed) to start beside another live agent of
// the node: the Node names another instance and that instance renewed the
// node's Lease within the lease duration. A Node claimed by an instance
// whose Lease expired is taken over (registration rewrites the
// annotation). When the API server cannot be asked, Check lets the agent
// start: Setter still notices a foreign claim later.
func (c *Claim) Check(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	name := c.cfg.NodeName
	node, err := c.cfg.Nodes.Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		logger.Error(err, "Cannot check whether another agent runs this node; starting", "node", name)
		return nil
	}
	owner := node.Annotations[AnnotationAgentID]
	if owner == "" || owner == c.cfg.ID {
		return nil
	}
	l, err := c.cfg.Leases.Leases(c.cfg.LeaseNamespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		logger.Info("Taking over a node whose agent left no lease", "node", name, "previousAgent", owner)
		return nil
	case err != nil:
		logger.Error(err, "Cannot read the node's lease; starting", "node", name, "otherAgent", owner)
		return nil
	}
	duration := DefaultLeaseDuration
	if s := l.Spec.LeaseDurationSeconds; s != nil && *s > 0 {
		duration = time.Duration(*s) * time.Second
	}
	if rt := l.Spec.RenewTime; rt != nil {
		if age := c.cfg.Clock.Since(rt.Time); age < duration {
			return fmt.Errorf("%w: node %q is claimed by agent %s (this agent is %s) whose lease was renewed %v ago; stop it first, or wait for its lease (%v) to expire",
				ErrNodeClaimed, name, owner, c.cfg.ID, age.Round(time.Millisecond), duration)
		}
	}
	logger.Info("Taking over a node whose agent's lease expired", "node", name, "previousAgent", owner)
	return nil
}

// Setter is a nodestatus setter that watches the Node as the API server
// returns it: once another instance's identity appears (it took the node
// over while this agent could not renew its lease), it fails with
// ErrNodeClaimed and closes Done, so the host stops instead of fighting.
// Put it first.
func (c *Claim) Setter(ctx context.Context, _ time.Time, node *v1.Node) error {
	owner, ok := node.Annotations[AnnotationAgentID]
	if !ok || owner == c.cfg.ID || node.ResourceVersion == "" {
		return nil
	}
	err := fmt.Errorf("%w: node %q was taken over by agent %s (this agent is %s)", ErrNodeClaimed, node.Name, owner, c.cfg.ID)
	klog.FromContext(ctx).Error(err, "Stopping")
	c.once.Do(func() { c.err = err; close(c.done) })
	return err
}

// Done is closed once another agent took the node over; Err says which.
func (c *Claim) Done() <-chan struct{} { return c.done }

// Err is the takeover Done reports, nil before.
func (c *Claim) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Release removes this agent's identity from the Node (on a clean stop),
// so that another agent may start at once instead of waiting for the
// Lease to expire. The patch applies only while the Node still names this
// agent. A crash leaves the claim; the same agent restarted on its state
// is still the same agent.
func (c *Claim) Release(ctx context.Context) {
	ctx, cancel := clockctx.WithTimeout(ctx, c.cfg.Clock, releaseTimeout)
	defer cancel()
	key := strings.ReplaceAll(AnnotationAgentID, "/", "~1")
	patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/annotations/%s","value":%q},{"op":"remove","path":"/metadata/annotations/%s"}]`,
		key, c.cfg.ID, key)
	_, err := c.cfg.Nodes.Nodes().Patch(ctx, c.cfg.NodeName, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
		klog.FromContext(ctx).Error(err, "Could not release the node; another agent must wait for its lease to expire", "node", c.cfg.NodeName)
	}
}
