package integration

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodekit/nodekit/lease"
	"github.com/nodekit/nodekit/virtualnode"
	"github.com/nodekit/nodekit/virtualnode/simulated"
)

// TestShardedReplicaKilled runs three replicas sharing 30 virtual nodes in
// six shards against the API server; one replica is cut off at once (as a
// SIGKILL leaves it: no release). Its shards are taken over within a shard
// lease duration and a retry period, its nodes' leases keep renewing
// within their duration (the nodes stay Ready), and its pods run on under
// the new owners, adopted (same address, same start time), each on exactly
// one replica.
func TestShardedReplicaKilled(t *testing.T) {
	const nodes, pods = 30, 60
	run := time.Now().UnixNano() % 1e6 // -count=N runs start afresh
	ns := fmt.Sprintf("vnodes-sharded-%d", run)
	admin := srv.AdminClient()
	ensureNamespace(t, admin, ns)
	names := nodeNames(fmt.Sprintf("vn-shard-%d-", run), nodes)
	const shardDuration, nodeLease = 3 * time.Second, 10 * time.Second

	type replica struct {
		id     string
		s      *virtualnode.Sharded
		sim    *simulated.Provider
		killed atomic.Bool
		cancel context.CancelFunc
		done   chan error
	}
	start := func(id string) *replica {
		r := &replica{id: id, done: make(chan error, 1)}
		cfg := srv.AdminConfig()
		cfg.QPS, cfg.Burst = -1, 0
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return unreachableTransport{next: rt, down: &r.killed} }
		client, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		heartbeat, err := kubernetes.NewForConfig(lease.HeartbeatRESTConfig(rest.CopyConfig(cfg), 2*time.Second))
		require.NoError(t, err)
		r.sim, err = simulated.New(simulated.Config{})
		require.NoError(t, err)
		r.s, err = virtualnode.NewSharded(virtualnode.ShardedConfig{Identity: id, Shards: 6, Namespace: ns,
			LeaseDuration: shardDuration, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
			Agent: virtualnode.Config{Client: client, HeartbeatClient: heartbeat, Nodes: names, Provider: r.sim,
				LeaseDuration: nodeLease, StatusUpdateFrequency: time.Second}})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		go func() { r.done <- r.s.Run(ctx) }()
		return r
	}
	replicas := []*replica{start("a"), start("b"), start("c")}
	defer func() {
		for _, r := range replicas {
			r.cancel()
			select {
			case <-r.done:
			case <-time.After(30 * time.Second):
				t.Errorf("replica %s did not stop", r.id)
			}
			r.sim.Close()
		}
	}()
	held := func(rs ...*replica) []int {
		var out []int
		for _, r := range rs {
			out = append(out, r.s.Leading()...)
		}
		slices.Sort(out)
		return out
	}
	require.Eventually(t, func() bool { return slices.Equal(held(replicas...), []int{0, 1, 2, 3, 4, 5}) },
		30*time.Second, 100*time.Millisecond, "the six shards are held, each once")
	require.Eventually(t, func() bool { return readyNodes(t, admin, names, v1.ConditionTrue) == nodes },
		30*time.Second, 100*time.Millisecond, "every node Ready")
	parallel(t, pods, 8, func(i int) error {
		_, err := admin.CoreV1().Pods(ns).Create(context.Background(), vnodePod(ns, fmt.Sprintf("p-%02d", i), names[i%nodes], 1, nil), metav1.CreateOptions{})
		return err
	})
	require.Eventually(t, func() bool { total, ready := podsRunningReady(t, admin, ns); return total == pods && ready == pods },
		30*time.Second, 200*time.Millisecond, "every pod Running")
	before := map[string]v1.PodStatus{}
	list, err := admin.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, p := range list.Items {
		before[p.Name] = p.Status
	}

	// Kill the replica holding the most shards.
	victim := replicas[0]
	for _, r := range replicas[1:] {
		if len(r.s.Leading()) > len(victim.s.Leading()) {
			victim = r
		}
	}
	require.NotEmpty(t, victim.s.Leading())
	var alive []*replica
	for _, r := range replicas {
		if r != victim {
			alive = append(alive, r)
		}
	}
	lastRenew := renewTimes(t, admin, names)
	victim.killed.Store(true)
	killed := time.Now()
	worstGap := time.Duration(0)
	require.Eventually(t, func() bool {
		for n, rt := range renewTimes(t, admin, names) {
			if rt.After(lastRenew[n]) {
				worstGap = max(worstGap, rt.Sub(lastRenew[n]))
				lastRenew[n] = rt
			}
		}
		return slices.Equal(held(alive...), []int{0, 1, 2, 3, 4, 5})
	}, 30*time.Second, 100*time.Millisecond, "the live replicas take every shard")
	took := time.Since(killed)
	t.Logf("replica %s killed: its shards taken over in %v", victim.id, took.Round(time.Millisecond))
	// The lease must first look unchanged for its duration to a live
	// replica, which then takes it on its next retry (a loaded 2-core
	// machine under -race adds a second or so).
	require.Less(t, took, 2*shardDuration, "within a shard lease duration and a few retries")

	// Every node lease renews again, never later than its duration.
	require.Eventually(t, func() bool {
		fresh := 0
		for n, rt := range renewTimes(t, admin, names) {
			if rt.After(lastRenew[n]) {
				worstGap = max(worstGap, rt.Sub(lastRenew[n]))
				lastRenew[n] = rt
			}
			if time.Since(rt) < nodeLease/2 {
				fresh++
			}
		}
		return fresh == nodes
	}, 20*time.Second, 200*time.Millisecond, "every node lease renewed by the new owners")
	require.Less(t, worstGap, nodeLease, "no node lease expired across the takeover")
	require.Equal(t, nodes, readyNodes(t, admin, names, v1.ConditionTrue), "the nodes stayed Ready")

	// The pods run on, adopted, each on one live replica.
	require.Eventually(t, func() bool {
		n := 0
		for _, r := range alive {
			n += r.sim.Len()
		}
		return n == pods
	}, 20*time.Second, 200*time.Millisecond, "every pod runs on exactly one live replica")
	list, err = admin.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, p := range list.Items {
		b := before[p.Name]
		require.Equal(t, v1.PodRunning, p.Status.Phase, p.Name)
		require.Equal(t, b.PodIP, p.Status.PodIP, "%s keeps its address", p.Name)
		require.True(t, b.StartTime.Equal(p.Status.StartTime), "%s keeps its start time", p.Name)
	}
}
