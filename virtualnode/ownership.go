package virtualnode

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/kubeclient"
)

// ownership is this replica's claim on one shard Lease. The Lease's
// resourceVersion makes every write a compare-and-swap, so two replicas
// never both write a takeover; the timing rules make sure the previous
// holder has stopped acting before a new one starts, as client-go's leader
// election does (on the injected clock here):
//
//   - a replica takes a Lease held by another only after the record stayed
//     unchanged for the Lease's duration as seen on its own clock;
//   - the holder renews every retry period and gives the shard up (stops
//     acting) once no renewal succeeded for the renew deadline, which is
//     shorter than the duration: it is done before anyone may take over.
//     A renewal counts from the moment its request was sent, not from its
//     answer: the server may have committed it at any instant in between,
//     and another replica measures the duration from when it saw the
//     change. Every request runs under a context that ends at the renew
//     deadline.
type ownership struct {
	client                    kubeclient.LeasesGetter
	namespace, name, identity string
	duration                  time.Duration
	clock                     clock.Clock

	record   *coordinationv1.Lease // as last read or written
	observed time.Time             // when this replica saw record change
	// sent is when the request that last took or renewed the Lease was
	// sent: this replica may act until sent + the renew deadline.
	sent time.Time
}

// tryAcquire makes one attempt at holding the Lease; it reports whether
// this replica holds it now (and since o.sent).
func (o *ownership) tryAcquire(ctx context.Context) (bool, error) {
	now := o.clock.Now()
	leases := o.client.Leases(o.namespace)
	l, err := leases.Get(ctx, o.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: o.name, Namespace: o.namespace},
			Spec: o.held(coordinationv1.LeaseSpec{}, now)}, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("create lease %s/%s: %w", o.namespace, o.name, err)
		}
		o.record, o.observed, o.sent = l, now, now
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("get lease %s/%s: %w", o.namespace, o.name, err)
	}
	// A change counts from when its answer arrived, not from when it was
	// asked for: the holder may have renewed while the read was on its way.
	now = o.clock.Now()
	if o.record == nil || o.record.ResourceVersion != l.ResourceVersion || !apiequality.Semantic.DeepEqual(o.record.Spec, l.Spec) {
		o.record, o.observed = l, now
	}
	holder := ptr.Deref(l.Spec.HolderIdentity, "")
	ttl := o.duration
	if s := ptr.Deref(l.Spec.LeaseDurationSeconds, 0); s > 0 {
		ttl = time.Duration(s) * time.Second
	}
	if holder != "" && holder != o.identity && now.Before(o.observed.Add(ttl)) {
		return false, nil // another replica's, and alive as far as this one can tell
	}
	up := l.DeepCopy()
	now = o.clock.Now()
	up.Spec = o.held(up.Spec, now)
	l, err = leases.Update(ctx, up, metav1.UpdateOptions{})
	if err != nil {
		return false, fmt.Errorf("take lease %s/%s: %w", o.namespace, o.name, err)
	}
	o.record, o.observed, o.sent = l, now, now
	return true, nil
}

// held is spec with this replica as the holder, renewed at now.
func (o *ownership) held(spec coordinationv1.LeaseSpec, now time.Time) coordinationv1.LeaseSpec {
	t := metav1.NewMicroTime(now)
	if ptr.Deref(spec.HolderIdentity, "") != o.identity {
		spec.AcquireTime = &t
		if ptr.Deref(spec.HolderIdentity, "") != "" {
			spec.LeaseTransitions = ptr.To(ptr.Deref(spec.LeaseTransitions, 0) + 1)
		}
	}
	spec.HolderIdentity = ptr.To(o.identity)
	spec.LeaseDurationSeconds = ptr.To(int32(o.duration / time.Second))
	spec.RenewTime = &t
	return spec
}

// renewal is the answer to one renewal request.
type renewal struct {
	sent  time.Time // before the request
	lease *coordinationv1.Lease
	err   error
}

// renew writes a new renew time on rec, the held Lease as last written. It
// touches nothing of o's but its immutable fields, so a renewal abandoned
// at the renew deadline may still be running when o is used again.
func (o *ownership) renew(ctx context.Context, rec *coordinationv1.Lease) renewal {
	leases := o.client.Leases(o.namespace)
	r := renewal{sent: o.clock.Now()}
	up := rec.DeepCopy()
	t := metav1.NewMicroTime(r.sent)
	up.Spec.RenewTime = &t
	r.lease, r.err = leases.Update(ctx, up, metav1.UpdateOptions{})
	if apierrors.IsConflict(r.err) {
		// Written since (a label, or a renewal of ours that committed after
		// its deadline): renew the current record if it is still ours. The
		// send time stays the first request's, the earlier one.
		var cur *coordinationv1.Lease
		if cur, r.err = leases.Get(ctx, o.name, metav1.GetOptions{}); r.err == nil {
			if holder := ptr.Deref(cur.Spec.HolderIdentity, ""); holder != o.identity {
				r.err = fmt.Errorf("held by %q now", holder)
			} else {
				cur.Spec.RenewTime = &t
				r.lease, r.err = leases.Update(ctx, cur, metav1.UpdateOptions{})
			}
		}
	}
	if r.err != nil {
		r.err = fmt.Errorf("renew lease %s/%s: %w", o.namespace, o.name, r.err)
	}
	return r
}

// renewed records a successful renewal.
func (o *ownership) renewed(r renewal) {
	o.record, o.sent = r.lease, r.sent
}

// release gives the Lease up at once (no holder, a one-second duration),
// so another replica takes the shard without waiting for it to expire.
func (o *ownership) release(ctx context.Context) error {
	up := o.record.DeepCopy()
	t := metav1.NewMicroTime(o.clock.Now())
	up.Spec.HolderIdentity, up.Spec.LeaseDurationSeconds, up.Spec.RenewTime = nil, ptr.To[int32](1), &t
	_, err := o.client.Leases(o.namespace).Update(ctx, up, metav1.UpdateOptions{})
	return err
}
