package virtualnode

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/klog/v2"

	"github.com/nodekit/nodekit/clockctx"
)

// Defaults of ShardedConfig, as client-go leader election's.
const (
	DefaultShards         = 8
	DefaultShardNamespace = "kube-system"
	DefaultShardPrefix    = "virtualnode-shard"
	DefaultShardDuration  = 15 * time.Second
	DefaultShardDeadline  = 10 * time.Second
	DefaultShardPeriod    = 2 * time.Second
)

// ShardedConfig configures a Sharded agent.
type ShardedConfig struct {
	// Agent is what every shard's Agent is built from. Its Nodes are all
	// the nodes that every replica shares (the same list on each); a shard
	// runs those its stable hash assigns it. API.Addr's port is shard 0's:
	// shard i serves on that port plus i (port 0: any free port each), and
	// each node reports its shard's. API.Listener cannot be shared and is
	// refused. Registerer receives every shard's metrics with a "shard"
	// label (its number), registered while this replica leads the shard.
	Agent Config
	// Identity names this replica as the holder of its shard Leases
	// (holderIdentity): required and unique among replicas, e.g. the pod's
	// name. Two processes with one identity would both act.
	Identity string
	// Shards is how many shards the nodes are split into; default
	// DefaultShards, at most the number of nodes.
	Shards int
	// Namespace and Prefix name the shard Leases, <Prefix>-<i>; defaults
	// DefaultShardNamespace and DefaultShardPrefix.
	Namespace, Prefix string
	// LeaseDuration, RenewDeadline and RetryPeriod time the shard Leases as
	// client-go's leader election does (defaults 15s, 10s, 2s):
	// RenewDeadline must be shorter than LeaseDuration's whole seconds (a
	// Lease records its duration in seconds), whose difference is the time
	// a shard that lost its Lease has to stop. A holder counts each
	// renewal from the moment its request was sent, runs it under a
	// context that ends at the renew deadline, and stops its shard at that
	// deadline even while the request hangs.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Sharded runs the shards of a set of virtual nodes that this replica
// holds, so that several replicas share the nodes through Kubernetes
// itself: each shard is owned through a coordination.k8s.io Lease, taken
// over by another replica when its holder stops renewing it, and never run
// by two replicas at once (see the Lease rules on ownership). Build it with
// NewSharded and call Run once.
type Sharded struct {
	cfg    ShardedConfig
	shards [][]string
	pods   *podCache // every bound pod, shared by the shards' agents

	running atomic.Bool
	mu      sync.Mutex
	leading map[int]bool
}

// NewSharded validates cfg and splits the nodes; nothing talks to the API
// server before Run.
func NewSharded(cfg ShardedConfig) (*Sharded, error) {
	if cfg.Identity == "" {
		return nil, fmt.Errorf("%w: Identity is required", ErrInvalidConfig)
	}
	if cfg.Agent.API != nil && cfg.Agent.API.Listener != nil {
		return nil, fmt.Errorf("%w: API.Listener cannot be shared by shards: give API.Addr", ErrInvalidConfig)
	}
	cfg.LeaseDuration = cmp.Or(cfg.LeaseDuration, DefaultShardDuration)
	cfg.RenewDeadline = cmp.Or(cfg.RenewDeadline, DefaultShardDeadline)
	cfg.RetryPeriod = cmp.Or(cfg.RetryPeriod, DefaultShardPeriod)
	// A Lease records its duration in whole seconds: the others wait that.
	if cfg.LeaseDuration < time.Second || cfg.RenewDeadline <= 0 || cfg.RetryPeriod <= 0 ||
		cfg.RenewDeadline >= cfg.LeaseDuration.Truncate(time.Second) || cfg.RetryPeriod >= cfg.RenewDeadline || cfg.Shards < 0 {
		return nil, fmt.Errorf("%w: want 0 < RetryPeriod < RenewDeadline < LeaseDuration in whole seconds (at least 1s) and Shards >= 0", ErrInvalidConfig)
	}
	cfg.Namespace, cfg.Prefix = cmp.Or(cfg.Namespace, DefaultShardNamespace), cmp.Or(cfg.Prefix, DefaultShardPrefix)
	if err := cfg.Agent.setDefaults(); err != nil {
		return nil, err
	}
	cfg.Shards = min(cmp.Or(cfg.Shards, DefaultShards), len(cfg.Agent.Nodes))
	s := &Sharded{cfg: cfg, shards: make([][]string, cfg.Shards), leading: map[int]bool{}}
	nodes := make(map[string]bool, len(cfg.Agent.Nodes))
	for _, n := range cfg.Agent.Nodes {
		nodes[n] = true
	}
	s.pods = newPodCache(cfg.Agent, func(node string) bool { return nodes[node] })
	for _, n := range cfg.Agent.Nodes {
		i := ShardOf(n, cfg.Shards)
		s.shards[i] = append(s.shards[i], n)
	}
	return s, nil
}

// ShardOf is the shard of a node among n: a stable hash of its name, the
// same on every replica.
func ShardOf(node string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(node))
	return int(h.Sum32() % uint32(n))
}

// Leading returns the shards this replica runs now, in order.
func (s *Sharded) Leading() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for i, ok := range s.leading {
		if ok {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

// Run takes, keeps and runs shards until ctx is done, then stops them and
// releases their Leases so that another replica takes them at once. It
// returns nil after a clean stop. It may be called once.
func (s *Sharded) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	logger := klog.FromContext(ctx)
	logger.Info("Starting sharded virtual nodes", "identity", s.cfg.Identity, "shards", len(s.shards), "nodes", len(s.cfg.Agent.Nodes))
	fns := []func(context.Context){s.pods.run}
	for i := range s.shards {
		if len(s.shards[i]) > 0 {
			fns = append(fns, func(ctx context.Context) { s.runShard(ctx, i) })
		}
	}
	runAll(ctx, fns...)
	logger.Info("Stopped sharded virtual nodes")
	return nil
}

// runShard owns shard i whenever it can: it runs the shard's Agent while
// the Lease is held, and stops it as soon as the Lease may be lost.
func (s *Sharded) runShard(ctx context.Context, i int) {
	logger := klog.FromContext(ctx).WithValues("shard", i)
	clk := s.cfg.Agent.Clock
	o := &ownership{client: s.cfg.Agent.HeartbeatClient, namespace: s.cfg.Namespace,
		name: s.cfg.Prefix + "-" + strconv.Itoa(i), identity: s.cfg.Identity, duration: s.cfg.LeaseDuration, clock: clk}
	for {
		actx, cancel := clockctx.WithTimeout(ctx, clk, s.cfg.RenewDeadline)
		held, err := o.tryAcquire(actx)
		cancel()
		if err != nil && ctx.Err() == nil {
			logger.V(2).Info("Shard lease not taken", "err", err)
		}
		if held {
			s.lead(ctx, logger, i, o)
		}
		if !s.sleep(ctx, s.cfg.RetryPeriod) {
			return
		}
	}
}

// sleep waits d on the injected clock; false if ctx ended first.
func (s *Sharded) sleep(ctx context.Context, d time.Duration) bool {
	t := s.cfg.Agent.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// lead runs shard i's Agent while its Lease stays renewed; it returns
// after the Agent stopped: ctx done (the Lease is then released), the
// renew deadline reached, or the Agent failed. The renew deadline is
// o.sent + RenewDeadline, o.sent being when the last successful request
// was sent; a timer stops the Agent there even while a renewal hangs.
func (s *Sharded) lead(ctx context.Context, logger klog.Logger, i int, o *ownership) {
	clk := s.cfg.Agent.Clock
	left := func() time.Duration { return o.sent.Add(s.cfg.RenewDeadline).Sub(clk.Now()) }
	if left() <= 0 {
		logger.Info("Shard lease taken too late to act on; waiting for the next round")
		return
	}
	logger.Info("Took shard", "nodes", len(s.shards[i]))
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.setLeading(i, true)
	done := s.startShard(runCtx, i)
	stop := func() {
		cancel()
		<-done
		s.setLeading(i, false)
	}
	expiry := clk.NewTimer(left())
	defer expiry.Stop()
	retry := clk.NewTimer(s.cfg.RetryPeriod)
	defer retry.Stop()
	var answer chan renewal // the renewal in flight, if any
	cancelRenewal := context.CancelFunc(func() {})
	defer func() { cancelRenewal() }()
	for {
		select {
		case err := <-done:
			s.setLeading(i, false)
			if ctx.Err() == nil {
				logger.Error(err, "Shard stopped; giving it up")
			}
			s.releaseShard(ctx, logger, o)
			return
		case <-ctx.Done():
			stop()
			s.releaseShard(ctx, logger, o)
			return
		case <-expiry.C():
			if d := left(); d > 0 { // a stale tick: renewed meanwhile
				expiry.Reset(d)
				continue
			}
			logger.Error(nil, "Shard lease not renewed within the renew deadline; stopping the shard", "renewDeadline", s.cfg.RenewDeadline)
			stop()
			return
		case <-retry.C():
			var rctx context.Context
			rctx, cancelRenewal = clockctx.WithTimeout(ctx, clk, left())
			answer = make(chan renewal, 1)
			go func(ch chan<- renewal, rec *coordinationv1.Lease) { ch <- o.renew(rctx, rec) }(answer, o.record)
		case r := <-answer:
			cancelRenewal()
			answer = nil
			if r.err != nil {
				logger.V(2).Info("Shard lease not renewed", "err", r.err)
			} else {
				o.renewed(r)
				expiry.Reset(left())
			}
			retry.Reset(s.cfg.RetryPeriod)
		}
	}
}

// startShard starts shard i's Agent; its Run's result arrives on the
// returned channel.
func (s *Sharded) startShard(ctx context.Context, i int) <-chan error {
	cfg := s.cfg.Agent
	cfg.Nodes = s.shards[i]
	// A shard taken over renews its nodes' leases at once (a shard's
	// share of the nodes is a small herd): the previous holder's last
	// renewals are a lease duration old by now.
	cfg.LeaseSpread = min(cfg.LeaseSpread, s.cfg.RetryPeriod)
	if cfg.API != nil {
		api := *cfg.API
		if host, port, err := net.SplitHostPort(api.Addr); err == nil {
			if p, err := strconv.Atoi(port); err == nil && p != 0 {
				api.Addr = net.JoinHostPort(host, strconv.Itoa(p+i))
			}
		}
		cfg.API = &api
	}
	var reg *shardRegisterer
	if cfg.Registerer != nil {
		// Each shard's metrics carry its number; they leave the registry
		// with the shard, so that leading it again registers them anew.
		reg = &shardRegisterer{reg: prometheus.WrapRegistererWith(prometheus.Labels{"shard": strconv.Itoa(i)}, cfg.Registerer)}
		cfg.Registerer = reg
	}
	done := make(chan error, 1)
	agent, err := newAgent(cfg, s.pods)
	if err != nil {
		reg.unregisterAll()
		done <- err
		return done
	}
	go func() {
		err := agent.Run(ctx)
		reg.unregisterAll()
		done <- err
	}()
	return done
}

// shardRegisterer registers a shard's collectors and remembers them, to
// unregister them all when the shard stops.
type shardRegisterer struct {
	reg prometheus.Registerer
	mu  sync.Mutex
	cs  []prometheus.Collector
}

// Register registers c and remembers it.
func (r *shardRegisterer) Register(c prometheus.Collector) error {
	if err := r.reg.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cs = append(r.cs, c)
	return nil
}

// MustRegister registers cs, panicking on an error as the interface says.
func (r *shardRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Unregister unregisters c.
func (r *shardRegisterer) Unregister(c prometheus.Collector) bool { return r.reg.Unregister(c) }

// unregisterAll unregisters every collector registered so far; nil-safe.
func (r *shardRegisterer) unregisterAll() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.cs {
		r.reg.Unregister(c)
	}
	r.cs = nil
}

// releaseShard gives the shard's Lease up, within a retry period even if
// ctx is done.
func (s *Sharded) releaseShard(ctx context.Context, logger klog.Logger, o *ownership) {
	ctx, cancel := clockctx.WithTimeout(context.WithoutCancel(ctx), s.cfg.Agent.Clock, s.cfg.RetryPeriod)
	defer cancel()
	if err := o.release(ctx); err != nil {
		logger.V(2).Info("Shard lease not released; it expires instead", "err", err)
	}
}

func (s *Sharded) setLeading(i int, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leading[i] = on
}
