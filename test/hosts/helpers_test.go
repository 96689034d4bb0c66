package hosts_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	cadvisorapi "github.com/google/cadvisor/info/v1"

	"github.com/nodekit/nodekit/nodestatus"
)

// t0 is the start of every simulated run.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// parkTimeout bounds the real time a block may take to park after a step.
const parkTimeout = 20 * time.Second

// accessor is a block's "next due" accessor: NextWake
type accessor struct {
	name string
	next func() (time.Time, bool)
}

// action is something the host does at a simulated instant.
type action struct {
	at time.Duration // after t0
	do func()
}

// driver steps one FakeClock for several blocks, always to the earliest
// time one of them (or a host action) waits for.
type driver struct {
	t         *testing.T
	clk       *clocktesting.FakeClock
	accessors []accessor
	// idle, if set, reports host-side quiescence the accessors do not
	// cover (pod workers: Workers.Active).
	idle func() bool
	// explain, if set, describes the host's state when the blocks do not
	// park.
	explain func() string
	steps   int
	// unarmed counts the polls at which a block said it waited but had
	// no timer armed yet.
	unarmed int
	onStep  func(now time.Time) // called after each park, optional
}

// park waits (in real time) until every block waits for a future instant
// and returns the earliest one (zero if none waits for a time).
func (d *driver) park() time.Time {
	d.t.Helper()
	var earliest time.Time
	var lastWhy string
	ok := assertEventually(func() bool {
		now := d.clk.Now()
		earliest = time.Time{}
		timed := 0
		// Accessors, then the host's idleness, then the accessors again: a
		// block that moved in between (say a relist that released a pod
		// worker) shows up as a different reading.
		first := make([]time.Time, len(d.accessors))
		for i, a := range d.accessors {
			next, ok := a.next()
			if !ok {
				lastWhy = a.name + " not parked"
				return false
			}
			first[i] = next
		}
		if d.idle != nil && !d.idle() {
			lastWhy = "host not idle"
			return false
		}
		for i, a := range d.accessors {
			next, ok := a.next()
			if !ok || !next.Equal(first[i]) {
				lastWhy = a.name + " not parked"
				return false
			}
			if next.IsZero() {
				continue
			}
			if !next.After(now) {
				// Either the block has not yet taken the timer that fired,
				// or it armed a timer for "now", which a FakeClock only
				// fires when it is set again. Poke the clock and re-check.
				d.clk.SetTime(now)
				lastWhy = a.name + " due now"
				return false
			}
			if earliest.IsZero() || next.Before(earliest) {
				earliest = next
			}
			timed++
		}
		// Workaround: an accessor may report ok before its Run has armed
		// the timer (seen with lease.Controller.NextWake). Each block waiting for a
		// time must hold at least one timer of the clock.
		if w := d.clk.Waiters(); w < timed {
			d.unarmed++
			lastWhy = fmt.Sprintf("%d timers armed for %d waiting blocks", w, timed)
			return false
		}
		return true
	})
	if !ok && d.explain != nil {
		lastWhy += " (" + d.explain() + ")"
	}
	require.Truef(d.t, ok, "blocks did not park at %v: %s", d.clk.Now().Sub(t0), lastWhy)
	if d.onStep != nil {
		d.onStep(d.clk.Now())
	}
	return earliest
}

// stamps are the simulated times at which the entries of an append-only
// log (a fake's recorded calls or updates) appeared. Blocks act only between
// two parks, at the instant the clock was stepped to, so an entry first seen
// at a park happened at that park's time: call see from driver.onStep.
type stamps []time.Duration

func (s *stamps) see(n int, now time.Time) {
	for len(*s) < n {
		*s = append(*s, now.Sub(t0))
	}
}

// assertEventually polls cond with a short real-time tick: used only to
// wait for goroutines to park.
func assertEventually(cond func() bool) bool {
	deadline := time.Now().Add(parkTimeout)
	tick := time.NewTicker(200 * time.Microsecond)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
}

// runUntil steps the clock to t0+end, doing the host actions at their
// instants (in order), and parks once more at the end.
func (d *driver) runUntil(end time.Duration, actions ...action) {
	d.t.Helper()
	sort.SliceStable(actions, func(i, j int) bool { return actions[i].at < actions[j].at })
	endT := t0.Add(end)
	for {
		earliest := d.park()
		now := d.clk.Now()
		if len(actions) > 0 && !t0.Add(actions[0].at).After(now) {
			actions[0].do()
			actions = actions[1:]
			continue
		}
		target := endT
		if !earliest.IsZero() && earliest.Before(target) {
			target = earliest
		}
		if len(actions) > 0 && t0.Add(actions[0].at).Before(target) {
			target = t0.Add(actions[0].at)
		}
		if !target.After(now) {
			return // at the end, parked
		}
		d.clk.SetTime(target)
		d.steps++
	}
}

// apiCall is one request the fake API server received.
type apiCall struct {
	verb, resource, subresource string
	at                          time.Duration // simulated time after t0
	obj                         runtime.Object
}

// apiServer is a fake clientset with a request log stamped with simulated
// time, and Node UIDs assigned on create as a real API server does.
type apiServer struct {
	*fake.Clientset
	clk   *clocktesting.FakeClock
	mu    sync.Mutex
	calls []apiCall
}

func newAPIServer(clk *clocktesting.FakeClock) *apiServer {
	s := &apiServer{Clientset: fake.NewClientset(), clk: clk}
	// The fake tracker assigns no UID; the Lease owner reference needs one.
	s.PrependReactor("create", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		n := a.(k8stesting.CreateAction).GetObject().(*v1.Node).DeepCopy()
		n.UID = types.UID("uid-of-" + n.Name)
		if err := s.Tracker().Create(a.GetResource(), n, a.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, n.DeepCopy(), nil
	})
	s.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		c := apiCall{verb: a.GetVerb(), resource: a.GetResource().Resource, subresource: a.GetSubresource(), at: clk.Now().Sub(t0)}
		if a, ok := a.(interface{ GetObject() runtime.Object }); ok { // create and update
			c.obj = a.GetObject().DeepCopyObject()
		}
		s.mu.Lock()
		s.calls = append(s.calls, c)
		s.mu.Unlock()
		return false, nil, nil
	})
	return s
}

// requests returns the logged requests matching verb, resource and
// subresource ("*" matches any verb).
func (s *apiServer) requests(verb, resource, subresource string) []apiCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []apiCall
	for _, c := range s.calls {
		if (verb == "*" || c.verb == verb) && c.resource == resource && c.subresource == subresource {
			out = append(out, c)
		}
	}
	return out
}

// actions counts the matching actions in the fake clientset's own log.
func (s *apiServer) actions(verb, resource, subresource string) int {
	n := 0
	for _, a := range s.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == subresource {
			n++
		}
	}
	return n
}

func times(calls []apiCall) []time.Duration {
	out := make([]time.Duration, 0, len(calls))
	for _, c := range calls {
		out = append(out, c.at)
	}
	return out
}

// healthSwitch is a runtime health func the test controls.
type healthSwitch struct {
	mu  sync.Mutex
	err error
}

func (h *healthSwitch) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

func (h *healthSwitch) Set(err error) {
	h.mu.Lock()
	h.err = err
	h.mu.Unlock()
}

// nodeSetters are the setters of a small machine: capacity, then Ready
// with runtime errors from health.
func nodeSetters(t *testing.T, health func() error) []nodestatus.Setter {
	t.Helper()
	var b nodestatus.Builder
	b.Add(nodestatus.MachineInfo(nodestatus.MachineConfig{
		Machine: func() (*cadvisorapi.MachineInfo, error) {
			return &cadvisorapi.MachineInfo{NumCores: 4, MemoryCapacity: 8 << 30}, nil
		},
		MaxPods: 20,
	}))
	b.Add(nodestatus.GoRuntime(), nil)
	b.Add(nodestatus.ReadyCondition(nodestatus.ReadyConfig{RuntimeErrors: health, IgnoreEphemeralStorage: true}))
	setters, err := b.Setters()
	require.NoError(t, err)
	return setters
}

func nodeReady(n *v1.Node) v1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status
		}
	}
	return v1.ConditionUnknown
}

// runBlock runs a block's Run in a goroutine and returns a func that
// waits for it to return.
func runBlock(t *testing.T, ctx context.Context, name string, run func(context.Context) error) func() {
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	return func() {
		select {
		case err := <-done:
			require.NoErrorf(t, err, "%s.Run", name)
		case <-time.After(parkTimeout):
			t.Errorf("%s.Run did not return", name)
		}
	}
}

func getNode(t *testing.T, api *apiServer, name string) *v1.Node {
	t.Helper()
	// Read the tracker directly so the read is not logged as a request.
	obj, err := api.Tracker().Get(v1.SchemeGroupVersion.WithResource("nodes"), "", name)
	require.NoError(t, err)
	return obj.(*v1.Node)
}
