package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nodekit/nodekit/kubeclient"
	"github.com/nodekit/nodekit/lease"
	"github.com/nodekit/nodekit/virtualnode"
	"github.com/nodekit/nodekit/virtualnode/simulated"
)

// The sharded scenario: three replicas share 30 virtual nodes in six
// shards; the one holding most shards is killed (no release). Its shards
// are taken over within a shard lease duration and a retry period, its
// nodes' leases keep renewing within their duration (the nodes stay
// Ready), and its pods run on under the new owners, adopted (same address,
// same start time), each on exactly one replica.
const (
	shardedNodes, shardedPods, shardCount = 30, 60, 6
	shardDuration, shardNodeLease         = 3 * time.Second, 10 * time.Second
)

// shardReplica is one replica of the scenario, in this process or another.
type shardReplica interface {
	ID() string
	Leading() []int
	Pods() int
	Kill()  // as SIGKILL: no release
	Close() // stop cleanly (end of test)
}

// newShardReplica builds a replica's Sharded, as each kind does.
func newShardReplica(id, ns string, names []string, cfg *rest.Config) (*virtualnode.Sharded, *simulated.Provider, error) {
	cfg.QPS, cfg.Burst = -1, 0
	client, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	heartbeat, err := kubeclient.NewForConfig(lease.HeartbeatRESTConfig(rest.CopyConfig(cfg), 2*time.Second))
	if err != nil {
		return nil, nil, err
	}
	sim, err := simulated.New(simulated.Config{})
	if err != nil {
		return nil, nil, err
	}
	s, err := virtualnode.NewSharded(virtualnode.ShardedConfig{Identity: id, Shards: shardCount, Namespace: ns,
		LeaseDuration: shardDuration, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
		Agent: virtualnode.Config{Client: client, HeartbeatClient: heartbeat, Nodes: names, Provider: sim,
			LeaseDuration: shardNodeLease, StatusUpdateFrequency: time.Second}})
	if err != nil {
		sim.Close()
		return nil, nil, err
	}
	return s, sim, nil
}

// runShardedKill runs the scenario with replicas made by start.
func runShardedKill(t *testing.T, prefix string, start func(id, ns string, names []string) shardReplica) {
	run := time.Now().UnixNano() % 1e6 // -count=N runs start afresh
	ns := fmt.Sprintf("%s-%d", prefix, run)
	admin := srv.AdminClient()
	ensureNamespace(t, admin, ns)
	names := nodeNames(fmt.Sprintf("%s-%d-", prefix, run), shardedNodes)
	replicas := []shardReplica{start("a", ns, names), start("b", ns, names), start("c", ns, names)}
	defer func() {
		for _, r := range replicas {
			r.Close()
		}
	}()
	held := func(rs ...shardReplica) []int {
		var out []int
		for _, r := range rs {
			out = append(out, r.Leading()...)
		}
		slices.Sort(out)
		return out
	}
	all := []int{0, 1, 2, 3, 4, 5}
	require.Eventually(t, func() bool { return slices.Equal(held(replicas...), all) },
		30*time.Second, 100*time.Millisecond, "the six shards are held, each once")
	require.Eventually(t, func() bool { return readyNodes(t, admin, names, v1.ConditionTrue) == shardedNodes },
		30*time.Second, 100*time.Millisecond, "every node Ready")
	parallel(t, shardedPods, 8, func(i int) error {
		_, err := admin.CoreV1().Pods(ns).Create(context.Background(), vnodePod(ns, fmt.Sprintf("p-%02d", i), names[i%shardedNodes], 1, nil), metav1.CreateOptions{})
		return err
	})
	require.Eventually(t, func() bool {
		total, ready := podsRunningReady(t, admin, ns)
		return total == shardedPods && ready == shardedPods
	}, 30*time.Second, 200*time.Millisecond, "every pod Running")
	before := map[string]v1.PodStatus{}
	list, err := admin.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, p := range list.Items {
		before[p.Name] = p.Status
	}

	// Kill the replica holding the most shards.
	victim := replicas[0]
	for _, r := range replicas[1:] {
		if len(r.Leading()) > len(victim.Leading()) {
			victim = r
		}
	}
	require.NotEmpty(t, victim.Leading())
	var alive []shardReplica
	for _, r := range replicas {
		if r != victim {
			alive = append(alive, r)
		}
	}
	lastRenew := renewTimes(t, admin, names)
	victim.Kill()
	killed := time.Now()
	worstGap := time.Duration(0)
	track := func() map[string]time.Time {
		now := renewTimes(t, admin, names)
		for n, rt := range now {
			if rt.After(lastRenew[n]) {
				worstGap = max(worstGap, rt.Sub(lastRenew[n]))
				lastRenew[n] = rt
			}
		}
		return now
	}
	require.Eventually(t, func() bool { track(); return slices.Equal(held(alive...), all) },
		30*time.Second, 100*time.Millisecond, "the live replicas take every shard")
	took := time.Since(killed)
	t.Logf("replica %s killed: its shards taken over in %v", victim.ID(), took.Round(time.Millisecond))
	// The lease must first look unchanged for its duration to a live
	// replica, which then takes it on its next retry (a loaded 2-core
	// machine under -race adds a second or so).
	require.Less(t, took, 2*shardDuration, "within a shard lease duration and a few retries")

	// Every node lease renews again, never later than its duration.
	require.Eventually(t, func() bool {
		fresh := 0
		for _, rt := range track() {
			if time.Since(rt) < shardNodeLease/2 {
				fresh++
			}
		}
		return fresh == shardedNodes
	}, 20*time.Second, 200*time.Millisecond, "every node lease renewed by the new owners")
	require.Less(t, worstGap, shardNodeLease, "no node lease expired across the takeover")
	require.Equal(t, shardedNodes, readyNodes(t, admin, names, v1.ConditionTrue), "the nodes stayed Ready")

	// The pods run on, adopted, each on one live replica.
	require.Eventually(t, func() bool {
		n := 0
		for _, r := range alive {
			n += r.Pods()
		}
		return n == shardedPods
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

// TestShardedReplicaKilled: the scenario with replicas in this process,
// the victim cut off from the API server at once.
func TestShardedReplicaKilled(t *testing.T) {
	runShardedKill(t, "vn-shard", func(id, ns string, names []string) shardReplica {
		r := &inProcessReplica{id: id, done: make(chan error, 1)}
		cfg := srv.AdminConfig()
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return unreachableTransport{next: rt, down: &r.killed} }
		var err error
		r.s, r.sim, err = newShardReplica(id, ns, names, cfg)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		go func() { r.done <- r.s.Run(ctx) }()
		return r
	})
}

type inProcessReplica struct {
	id     string
	s      *virtualnode.Sharded
	sim    *simulated.Provider
	killed atomic.Bool
	cancel context.CancelFunc
	done   chan error
}

func (r *inProcessReplica) ID() string     { return r.id }
func (r *inProcessReplica) Leading() []int { return r.s.Leading() }
func (r *inProcessReplica) Pods() int      { return r.sim.Len() }
func (r *inProcessReplica) Kill()          { r.killed.Store(true) }
func (r *inProcessReplica) Close() {
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		panic("replica " + r.id + " did not stop")
	}
	r.sim.Close()
}

// TestShardedReplicaSIGKILL: the scenario with each replica its own
// process (this test binary, re-executed), the victim killed with SIGKILL:
// its connections and leases are dropped by the kernel, not by the code.
func TestShardedReplicaSIGKILL(t *testing.T) {
	kubeconfig := writeKubeconfig(t, srv.AdminConfig())
	runShardedKill(t, "vn-sigkill", func(id, ns string, names []string) shardReplica {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), replicaEnv+"="+id, "NODEKIT_TEST_KUBECONFIG="+kubeconfig,
			"NODEKIT_TEST_NS="+ns, "NODEKIT_TEST_NODES="+strings.Join(names, ","))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		line, err := bufio.NewReader(out).ReadString('\n')
		require.NoError(t, err, "replica %s did not start", id)
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "status ")
		require.True(t, ok, "replica %s said %q", id, line)
		return &processReplica{t: t, id: id, cmd: cmd, addr: addr}
	})
}

type processReplica struct {
	t      *testing.T
	id     string
	cmd    *exec.Cmd
	addr   string
	killed bool
}

func (r *processReplica) ID() string { return r.id }

// status reads the replica's status endpoint; a killed replica holds
// nothing.
func (r *processReplica) status() replicaStatus {
	var st replicaStatus
	if r.killed {
		return st
	}
	resp, err := http.Get("http://" + r.addr + "/status")
	require.NoError(r.t, err)
	defer func() { _ = resp.Body.Close() }()
	require.NoError(r.t, json.NewDecoder(resp.Body).Decode(&st))
	return st
}

func (r *processReplica) Leading() []int { return r.status().Leading }
func (r *processReplica) Pods() int      { return r.status().Pods }
func (r *processReplica) Kill() {
	require.NoError(r.t, r.cmd.Process.Signal(syscall.SIGKILL))
	_ = r.cmd.Wait()
	r.killed = true
}
func (r *processReplica) Close() {
	if r.killed {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		r.t.Errorf("replica %s did not stop on SIGTERM", r.id)
	}
}

type replicaStatus struct {
	Leading []int `json:"leading"`
	Pods    int   `json:"pods"`
}

// replicaEnv, when set (to its identity), makes the test binary a replica
// process of TestShardedReplicaSIGKILL instead of running the tests.
const replicaEnv = "NODEKIT_TEST_VNODE_REPLICA"

// runReplicaProcess is the body of a replica process: it serves its
// status on a loopback port (announced as the first line of its output)
// and runs until SIGTERM (or is killed).
func runReplicaProcess() int {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("NODEKIT_TEST_KUBECONFIG"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 1
	}
	s, sim, err := newShardReplica(os.Getenv(replicaEnv), os.Getenv("NODEKIT_TEST_NS"),
		strings.Split(os.Getenv("NODEKIT_TEST_NODES"), ","), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 1
	}
	defer sim.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 1
	}
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_ = json.NewEncoder(w).Encode(replicaStatus{Leading: s.Leading(), Pods: sim.Len()})
		}))
	}()
	fmt.Printf("status %s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := s.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 1
	}
	return 0
}

// writeKubeconfig writes cfg (a host, TLS material and a token) as a
// kubeconfig file.
func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	path := t.TempDir() + "/kubeconfig"
	require.NoError(t, clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"test": {Server: cfg.Host, CertificateAuthorityData: cfg.CAData,
			CertificateAuthority: cfg.CAFile, TLSServerName: cfg.ServerName, InsecureSkipTLSVerify: cfg.Insecure}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"admin": {Token: cfg.BearerToken, ClientCertificateData: cfg.CertData,
			ClientKeyData: cfg.KeyData, ClientCertificate: cfg.CertFile, ClientKey: cfg.KeyFile}},
		Contexts:       map[string]*clientcmdapi.Context{"test": {Cluster: "test", AuthInfo: "admin"}},
		CurrentContext: "test",
	}, path))
	return path
}
