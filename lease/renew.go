package lease

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/clockctx"
	"github.com/nodekit/nodekit/internal/retry"
)

// ErrRenewInProgress is returned by Renew when a renewal of the same name is
// already running.
var ErrRenewInProgress = errors.New("lease: renewal already in progress")

// Renew renews the lease of nodeName once, synchronously, and reschedules
// it: the next renewal is due a jittered RenewInterval after a success, or
// after a backoff (200ms doubling to 7s) after a failure.
//
// On the happy path it is a single UPDATE built from the last lease the
// controller wrote. On a conflict, or when the lease is gone, it GETs (and
// if needed CREATEs) the lease and tries again, up to MaxUpdateAttempts
// writes. Any other error ends the renewal: retrying at once against a
// failing API server only adds load, so the retry waits for the backoff.
// Errors wrap the API error (apierrors.IsForbidden works on them).
func (c *Controller) Renew(ctx context.Context, nodeName string) error {
	c.mu.Lock()
	e, ok := c.entries[nodeName]
	switch {
	case !ok:
		c.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrUnknownName, nodeName)
	case e.inFlight:
		c.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrRenewInProgress, nodeName)
	}
	if e.index >= 0 {
		heap.Remove(&c.queue, e.index)
	}
	e.inFlight = true
	c.inFlight++
	due := e.due
	c.mu.Unlock()
	return c.renewAndReschedule(ctx, e, due)
}

// state is what one renewal reads from and writes back to an entry, so that
// the API calls run without holding the controller's lock.
type state struct {
	lease      *coordinationv1.Lease
	uid        types.UID
	uidSet     bool
	lastLookup time.Time
}

func (c *Controller) renewAndReschedule(ctx context.Context, e *entry, due time.Time) error {
	start := c.cfg.Clock.Now()
	c.mu.Lock()
	last := e.lease
	st := state{uid: e.uid, uidSet: e.uidSet, lastLookup: e.lastLookup}
	c.mu.Unlock()
	st.lease = decodeLease(last)

	err := c.renew(ctx, e.name, &st)
	kept := encodeLease(st.lease)
	end := c.cfg.Clock.Now()
	c.metrics.renewed(err, end.Sub(start).Seconds(), max(0, start.Sub(due).Seconds()))

	c.mu.Lock()
	e.inFlight = false
	c.inFlight--
	if !e.uidSet || st.uidSet { // a concurrent SetNodeUID wins over lookups
		e.uid, e.uidSet = st.uid, st.uidSet
	}
	e.lease, e.lastLookup = kept, st.lastLookup
	if err == nil {
		e.failures = 0
		e.due = end.Add(retry.Jitter(c.cfg.RenewInterval, c.cfg.RenewJitter, c.cfg.Rand()))
	} else {
		e.failures++
		e.due = end.Add(retry.Backoff(e.failures, c.cfg.BackoffInitial, c.cfg.BackoffMax))
	}
	failures, retryIn := e.failures, e.due.Sub(end)
	if !e.removed {
		heap.Push(&c.queue, e)
		c.nudge()
	}
	c.mu.Unlock()

	// A renewal cut short by ctx (the host shutting down) is not the API
	// server's failure: nothing to report.
	if err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Error(err, "Failed to renew lease, will retry",
			"lease", klog.KRef(c.cfg.Namespace, e.name), "failures", failures, "retryIn", retryIn)
		if failures >= 2 && c.cfg.OnRepeatedFailure != nil {
			c.cfg.OnRepeatedFailure(e.name, err)
		}
	}
	return err
}

// renew performs the API calls of one renewal, updating st.
func (c *Controller) renew(ctx context.Context, name string, st *state) error {
	c.lookupOwner(ctx, name, st)
	leases := c.cfg.Client.Leases(c.cfg.Namespace)
	base := st.lease
	for range c.cfg.MaxUpdateAttempts {
		if base == nil {
			got, err := c.getOrCreate(ctx, name, st)
			if err != nil {
				return err
			}
			if got.created {
				st.lease = got.lease
				return nil
			}
			base = got.lease
		}
		rctx, cancel := c.requestContext(ctx)
		updated, err := leases.Update(rctx, c.build(ctx, name, base, st), metav1.UpdateOptions{})
		cancel()
		switch {
		case err == nil:
			st.lease = strip(updated)
			return nil
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			// Someone else wrote or deleted it: read it again.
			klog.FromContext(ctx).V(2).Info("Lease changed under us, re-reading", "lease", klog.KRef(c.cfg.Namespace, name), "err", err)
			st.lease, base = nil, nil
		default:
			st.lease = nil
			return fmt.Errorf("lease: update %s/%s: %w", c.cfg.Namespace, name, err)
		}
	}
	return fmt.Errorf("%w: %s/%s after %d attempts", ErrAttemptsExhausted, c.cfg.Namespace, name, c.cfg.MaxUpdateAttempts)
}

type got struct {
	lease   *coordinationv1.Lease
	created bool
}

// getOrCreate reads the lease, creating it when it does not exist.
func (c *Controller) getOrCreate(ctx context.Context, name string, st *state) (got, error) {
	leases := c.cfg.Client.Leases(c.cfg.Namespace)
	rctx, cancel := c.requestContext(ctx)
	defer cancel()
	lease, err := leases.Get(rctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		lease = strip(lease)
		c.adoptOwner(lease, st)
		return got{lease: lease}, nil
	case !apierrors.IsNotFound(err):
		return got{}, fmt.Errorf("lease: get %s/%s: %w", c.cfg.Namespace, name, err)
	}
	// The lease is gone. If it had an owner reference that we learned by a
	// lookup, the Node may have been recreated with a new UID (and the
	// garbage collector removed the lease): look the UID up again rather
	// than recreate a lease owned by a Node that no longer exists.
	if !st.uidSet && st.uid != "" {
		st.uid, st.lastLookup = "", time.Time{}
		c.lookupOwner(ctx, name, st)
	}
	created, err := leases.Create(rctx, c.build(ctx, name, nil, st), metav1.CreateOptions{})
	if err != nil {
		return got{}, fmt.Errorf("lease: create %s/%s: %w", c.cfg.Namespace, name, err)
	}
	klog.FromContext(ctx).V(2).Info("Created lease", "lease", klog.KRef(c.cfg.Namespace, name))
	return got{lease: strip(created), created: true}, nil
}

// build returns the lease to write: base (or a new lease) renewed now,
// held by this controller, owned by the Node when its UID is known. base is
// modified: it is always a copy of its own (decoded from what an entry
// keeps, or read), which no caller keeps once it is written.
func (c *Controller) build(ctx context.Context, name string, base *coordinationv1.Lease, st *state) *coordinationv1.Lease {
	holder := c.cfg.HolderIdentity(name)
	var l *coordinationv1.Lease
	if base == nil {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.cfg.Namespace}}
	} else {
		l = base
		if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != holder {
			klog.FromContext(ctx).Info("Lease is held by another identity; taking it over",
				"lease", klog.KRef(c.cfg.Namespace, name), "holder", h, "newHolder", holder)
		}
	}
	l.Spec.HolderIdentity = &holder
	l.Spec.LeaseDurationSeconds = ptr.To(int32(c.cfg.LeaseDuration / time.Second))
	l.Spec.RenewTime = &metav1.MicroTime{Time: c.cfg.Clock.Now()}
	if st.uid != "" {
		setOwner(l, name, st.uid)
	}
	return l
}

// setOwner makes the Node (name, uid) the lease's owner, replacing a stale
// reference to an earlier Node of the same name.
func setOwner(l *coordinationv1.Lease, name string, uid types.UID) {
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: name, UID: uid}
	for i, o := range l.OwnerReferences {
		if o.APIVersion == "v1" && o.Kind == "Node" {
			l.OwnerReferences[i] = ref
			return
		}
	}
	l.OwnerReferences = append(l.OwnerReferences, ref)
}

// adoptOwner learns the Node UID from a lease read from the server.
func (c *Controller) adoptOwner(l *coordinationv1.Lease, st *state) {
	if st.uid != "" {
		return
	}
	for _, o := range l.OwnerReferences {
		if o.APIVersion == "v1" && o.Kind == "Node" && o.Name == l.Name {
			st.uid = o.UID
		}
	}
}

// lookupOwner calls NodeUID when the UID is unknown and the last lookup is
// at least OwnerLookupInterval old. A failed lookup is logged, not fatal: the
// lease is renewed without an owner reference meanwhile.
func (c *Controller) lookupOwner(ctx context.Context, name string, st *state) {
	if st.uid != "" || c.cfg.NodeUID == nil {
		return
	}
	now := c.cfg.Clock.Now()
	if !st.lastLookup.IsZero() && now.Sub(st.lastLookup) < c.cfg.OwnerLookupInterval {
		return
	}
	st.lastLookup = now
	rctx, cancel := c.requestContext(ctx)
	defer cancel()
	uid, err := c.cfg.NodeUID(rctx, name)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Node not found yet; renewing the lease without an owner reference",
			"node", name, "err", err, "nextLookupIn", c.cfg.OwnerLookupInterval)
		return
	}
	st.uid = uid
}

// requestContext bounds one API request by RequestTimeout on the injected
// clock.
func (c *Controller) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return clockctx.WithTimeout(ctx, c.cfg.Clock, c.cfg.RequestTimeout)
}

// decodeLease returns the lease kept as enc, nil for none (or for an
// encoding that does not decode, which encodeLease never makes).
func decodeLease(enc []byte) *coordinationv1.Lease {
	if enc == nil {
		return nil
	}
	l := &coordinationv1.Lease{}
	if l.Unmarshal(enc) != nil {
		return nil
	}
	return l
}

// encodeLease returns the encoding to keep of l, nil for none or for one
// that does not encode (the next renewal then reads the server's).
func encodeLease(l *coordinationv1.Lease) []byte {
	if l == nil {
		return nil
	}
	enc, err := l.Marshal()
	if err != nil {
		return nil
	}
	return enc
}

// strip drops what the controller never sends back (managed fields), which
// makes each update smaller than the object the server returned.
func strip(l *coordinationv1.Lease) *coordinationv1.Lease {
	l.ManagedFields = nil
	return l
}
