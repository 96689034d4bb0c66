// Package leasetest provides an in-memory fake of the client interface the
// lease package accepts, with the API server's optimistic-concurrency rules
// and hooks for injecting errors and latency.
package leasetest

import (
	"context"
	"errors"
	"strconv"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/kubeclient"
)

var _ kubeclient.LeasesGetter = (*Client)(nil)

var leaseResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

// Hook runs before every request with its verb ("get", "create" or
// "update") and lease name. A non-nil error fails the request. It may
// block (for example until ctx is done, to simulate a hung server).
type Hook func(ctx context.Context, verb, namespace, name string) error

// Client is an in-memory LeasesGetter. The zero value is not usable; call
// New.
type Client struct {
	mu     sync.Mutex
	leases map[types.NamespacedName]*coordinationv1.Lease
	rv     int64
	calls  map[string]int
	hook   Hook
}

// New returns an empty fake.
func New() *Client {
	return &Client{leases: map[types.NamespacedName]*coordinationv1.Lease{}, calls: map[string]int{}}
}

// SetHook installs h (nil removes it).
func (c *Client) SetHook(h Hook) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hook = h
}

// Calls returns how many requests of verb were made (hook failures
// included).
func (c *Client) Calls(verb string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[verb]
}

// ResetCalls zeroes the request counters.
func (c *Client) ResetCalls() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = map[string]int{}
}

// Lease returns a copy of a stored lease, or nil.
func (c *Client) Lease(namespace, name string) *coordinationv1.Lease {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.leases[types.NamespacedName{Namespace: namespace, Name: name}]; ok {
		return l.DeepCopy()
	}
	return nil
}

// Put stores a lease as if another client wrote it, bumping its
// resourceVersion.
func (c *Client) Put(l *coordinationv1.Lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.store(l.DeepCopy())
}

// Remove deletes a stored lease as if another client deleted it.
func (c *Client) Remove(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.leases, types.NamespacedName{Namespace: namespace, Name: name})
}

func (c *Client) store(l *coordinationv1.Lease) *coordinationv1.Lease {
	c.rv++
	l.ResourceVersion = strconv.FormatInt(c.rv, 10)
	if l.UID == "" {
		l.UID = types.UID("uid-" + l.ResourceVersion)
	}
	c.leases[types.NamespacedName{Namespace: l.Namespace, Name: l.Name}] = l
	return l.DeepCopy()
}

// begin counts the request and runs the hook outside the lock.
func (c *Client) begin(ctx context.Context, verb, ns, name string) error {
	c.mu.Lock()
	c.calls[verb]++
	h := c.hook
	c.mu.Unlock()
	if h != nil {
		if err := h(ctx, verb, ns, name); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// Leases implements kubeclient.LeasesGetter.
func (c *Client) Leases(namespace string) kubeclient.LeaseInterface {
	return &leases{c: c, ns: namespace}
}

type leases struct {
	c  *Client
	ns string
}

func (l *leases) key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: l.ns, Name: name}
}

func (l *leases) Get(ctx context.Context, name string, _ metav1.GetOptions) (*coordinationv1.Lease, error) {
	if err := l.c.begin(ctx, "get", l.ns, name); err != nil {
		return nil, err
	}
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	cur, ok := l.c.leases[l.key(name)]
	if !ok {
		return nil, apierrors.NewNotFound(leaseResource, name)
	}
	return cur.DeepCopy(), nil
}

func (l *leases) Create(ctx context.Context, lease *coordinationv1.Lease, _ metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if err := l.c.begin(ctx, "create", l.ns, lease.Name); err != nil {
		return nil, err
	}
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	if _, ok := l.c.leases[l.key(lease.Name)]; ok {
		return nil, apierrors.NewAlreadyExists(leaseResource, lease.Name)
	}
	n := lease.DeepCopy()
	n.Namespace, n.UID = l.ns, ""
	return l.c.store(n), nil
}

func (l *leases) Update(ctx context.Context, lease *coordinationv1.Lease, _ metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if err := l.c.begin(ctx, "update", l.ns, lease.Name); err != nil {
		return nil, err
	}
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	cur, ok := l.c.leases[l.key(lease.Name)]
	if !ok {
		return nil, apierrors.NewNotFound(leaseResource, lease.Name)
	}
	if lease.ResourceVersion != cur.ResourceVersion {
		return nil, apierrors.NewConflict(leaseResource, lease.Name, errors.New("the object has been modified"))
	}
	n := lease.DeepCopy()
	n.Namespace, n.UID = l.ns, cur.UID
	return l.c.store(n), nil
}
