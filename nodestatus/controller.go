package nodestatus

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/clockctx"
	"github.com/nodekit/nodekit/internal/parking"
)

// ErrSetters is wrapped by the error Sync returns when the status was
// reported but some setters failed; errors.Is tells it from a failed report.
var ErrSetters = errors.New("nodestatus: some setters failed")

// Controller registers a Node and keeps its status reported. Build it with
// New; drive it with Run, or call Sync from your own loop. Its methods are
// safe for concurrent use; Sync calls are serialized.
type Controller struct {
	cfg Config

	mu         sync.Mutex // serializes Sync; guards the fields below
	registered bool
	// last is the server's Node as of our last read or write, protobuf
	// encoded without its managed fields (a fraction of a decoded Node's
	// size, which counts for an agent of a thousand virtual nodes); nil:
	// none.
	last       []byte
	lastUID    types.UID
	lastReport time.Time     // last successful status patch
	delay      time.Duration // jitter added to ReportFrequency after a change
	ready      bool          // the last reported Ready condition was True

	trigger chan struct{}
	parked  parking.State // Run's waiting state, for NextWake
}

// New validates cfg and returns a Controller.
func New(cfg Config) (*Controller, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	return &Controller{cfg: cfg, trigger: make(chan struct{}, 1)}, nil
}

// SyncResult tells what one Sync did.
type SyncResult struct {
	// Registered: the Node was created or reconciled in this pass.
	Registered bool
	// Patched: a status patch was sent and accepted.
	Patched bool
	// Ready: the Node's Ready condition, as last reported, is True.
	Ready bool
}

// Sync is one pass of the controller: register the Node if it is not yet
// (or no longer) registered, compute the status with every setter, and
// patch it if anything but heartbeat times changed or the report period
// has passed. The status update makes up to UpdateRetries tries; the first
// reads the Lister or the last-known copy, later ones GET from the server.
// A Node found deleted is registered again on the next pass.
func (c *Controller) Sync(ctx context.Context) (SyncResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var res SyncResult
	if !c.registered && !c.cfg.DisableRegistration {
		if err := c.register(ctx); !c.registered {
			return res, err
		}
		res.Registered = true
	}
	var lastErr error
	for try := 0; try < UpdateRetries; try++ {
		patched, setErr, err := c.tryUpdate(ctx, try)
		if err == nil {
			res.Patched, res.Ready = patched, c.ready
			if setErr != nil {
				return res, fmt.Errorf("%w: %w", ErrSetters, setErr)
			}
			return res, nil
		}
		lastErr = err
		if apierrors.IsNotFound(err) && !c.cfg.DisableRegistration {
			c.registered, c.last = false, nil
			klog.FromContext(ctx).Info("Node is gone from the API server; it will be registered again", "node", c.cfg.NodeName)
			return res, fmt.Errorf("nodestatus: node %q not found: %w", c.cfg.NodeName, err)
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		klog.FromContext(ctx).Error(err, "Error updating node status, will retry", "node", c.cfg.NodeName, "try", try+1)
		if try > 0 && c.cfg.OnRepeatedFailure != nil {
			c.cfg.OnRepeatedFailure(err)
		}
	}
	return res, fmt.Errorf("nodestatus: update node status exceeds retry count: %w", lastErr)
}

// tryUpdate is one try of a status update. It returns whether it patched,
// the setters' errors, and the error that failed the try.
func (c *Controller) tryUpdate(ctx context.Context, try int) (bool, error, error) {
	original, fromLast, err := c.read(ctx, try)
	if err != nil {
		return false, nil, err
	}
	node := original.DeepCopy()
	labelsFixed := ensureOSLabels(node)
	now := c.cfg.Clock.Now()
	setErr := Apply(ctx, now, node, c.cfg.Setters)
	changed := labelsFixed || StatusChanged(&original.Status, &node.Status)
	if !changed && now.Sub(c.lastReport) < c.cfg.ReportFrequency+c.delay {
		if !fromLast {
			c.remember(original)
		}
		c.ready = isReady(original)
		return false, setErr, nil
	}
	if changed || c.lastReport.IsZero() {
		c.delay = c.reportJitter()
	} else {
		c.delay = 0
	}
	updated, err := c.patchStatus(ctx, original, node)
	if err != nil {
		return false, setErr, err
	}
	c.remember(updated)
	c.lastReport = now
	c.ready = isReady(updated)
	return true, setErr, nil
}

// read returns the Node the try starts from, and whether it is the
// last-known copy. It is never modified.
func (c *Controller) read(ctx context.Context, try int) (*v1.Node, bool, error) {
	if try == 0 {
		if c.cfg.Lister != nil {
			if n, err := c.cfg.Lister.Get(c.cfg.NodeName); err == nil && n != nil {
				return n, false, nil
			}
		} else if n := c.lastNode(); n != nil {
			return n, true, nil
		}
	}
	rctx, cancel := c.requestContext(ctx)
	defer cancel()
	n, err := c.cfg.HeartbeatClient.Nodes().Get(rctx, c.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("error getting node %q: %w", c.cfg.NodeName, err)
	}
	return n, false, nil
}

// remember records n (not modified) as the last-known Node. A Node that
// cannot be encoded (or kept by the Codec), which a decoded one always
// can, leaves none: the next pass reads the server.
func (c *Controller) remember(n *v1.Node) {
	s := *n
	s.ManagedFields = nil
	enc, err := s.Marshal()
	if err == nil && c.cfg.Codec != nil {
		enc, err = c.cfg.Codec.Encode(enc)
	}
	if err != nil {
		c.last, c.lastUID = nil, ""
		return
	}
	c.last, c.lastUID = enc, n.UID
	if c.cfg.View != nil {
		c.cfg.View.set(s.DeepCopy())
	}
}

// lastNode decodes the last-known Node afresh, or returns nil (also when
// the Codec cannot give it back: the next read is the server's).
func (c *Controller) lastNode() *v1.Node {
	if c.last == nil {
		return nil
	}
	raw := c.last
	if c.cfg.Codec != nil {
		var err error
		if raw, err = c.cfg.Codec.Decode(nil, c.last); err != nil {
			return nil
		}
	}
	n := &v1.Node{}
	if n.Unmarshal(raw) != nil {
		return nil
	}
	return n
}

// ensureOSLabels sets the stable os and arch labels if they are missing or
// wrong, as the kubelet does on every update.
func ensureOSLabels(node *v1.Node) bool {
	fixed := false
	for _, l := range [...]struct{ key, value string }{{v1.LabelOSStable, goruntime.GOOS}, {v1.LabelArchStable, goruntime.GOARCH}} {
		if node.Labels[l.key] != l.value {
			if node.Labels == nil {
				node.Labels = map[string]string{}
			}
			node.Labels[l.key] = l.value
			fixed = true
		}
	}
	return fixed
}

func isReady(node *v1.Node) bool {
	c := findCondition(node, v1.NodeReady)
	return c != nil && c.Status == v1.ConditionTrue
}

// Node returns a copy of the Node as last read from or written to the API
// server, without its managed fields, or nil before the first.
func (c *Controller) Node() *v1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastNode()
}

// Trigger asks Run for a status pass now instead of at the next period,
// e.g. when the runtime turns ready or pressure changes. It never blocks;
// triggers before the pass coalesce.
func (c *Controller) Trigger() {
	c.parked.Wake()
	select {
	case c.trigger <- struct{}{}:
	default:
	}
}

// requestContext bounds one API request by RequestTimeout on the injected
// clock.
func (c *Controller) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return clockctx.WithTimeout(ctx, c.cfg.Clock, c.cfg.RequestTimeout)
}

// reportJitter is the offset of the next unforced report after a change:
// ReportFrequency·ReportJitter·(2r−1), r from Rand.
func (c *Controller) reportJitter() time.Duration {
	return time.Duration(float64(c.cfg.ReportFrequency) * c.cfg.ReportJitter * (2*c.cfg.Rand() - 1))
}
