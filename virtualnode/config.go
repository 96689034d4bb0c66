package virtualnode

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/kubeclient"
	"github.com/nodekit/nodekit/lease"
)

// ErrInvalidConfig is wrapped by every configuration error of this package.
var ErrInvalidConfig = errors.New("virtualnode: invalid config")

// Defaults.
const (
	// DefaultCPU, DefaultMemory and DefaultPods are each node's capacity.
	DefaultCPU    = 32
	DefaultMemory = "256Gi"
	DefaultPods   = 110
	// DefaultEphemeralStorage is each node's ephemeral-storage capacity.
	DefaultEphemeralStorage = "1Ti"
	// DefaultStatusWorkers bounds the node status syncs in flight.
	DefaultStatusWorkers = 8
	// DefaultMaxConcurrentSyncs bounds the pod worker goroutines.
	DefaultMaxConcurrentSyncs = 256
	// NodesPerLeaseWorker sizes the default LeaseWorkers of a large
	// agent: one renewal in flight per this many nodes, 10 renewals a
	// second at a 40s lease, so a worker keeps up with up to 100ms per
	// request.
	NodesPerLeaseWorker = 100
	// DefaultLeaseBatchWindow is how early a lease may be renewed to go
	// with another due one (Config.LeaseBatchWindow).
	DefaultLeaseBatchWindow = time.Second
	// DefaultLeaseSpread staggers the first lease renewals of the nodes
	// over the renew interval.
	DefaultLeaseSpread = 10 * time.Second
	// DefaultNodeLabel is set to "true" on every virtual node.
	DefaultNodeLabel = "virtualnodes.nodekit.io/virtual"
)

// Config configures an Agent. Zero fields take the documented defaults.
type Config struct {
	// Client lists and watches pods, patches pod status, deletes finished
	// pods and registers the Nodes. Required. One client serves every
	// node: a cluster that authorizes nodes by identity (Node authorizer,
	// NodeRestriction) would need one credential per node instead; give
	// this client a role that may do all of the above for any node.
	Client kubeclient.Interface
	// HeartbeatClient renews the leases and patches node status, so a busy
	// pod client never delays heartbeats; build it with
	// lease.HeartbeatRESTConfig. Default Client.
	HeartbeatClient kubeclient.Interface
	// Nodes are the names of the virtual nodes. Required, unique.
	Nodes []string
	// NodeIP returns the InternalIP of the i-th node; default 172.16.0.0/12
	// in order (the pods' hostIP).
	NodeIP func(i int) string

	// CPU (cores), Memory and Pods are each node's capacity (and
	// allocatable); defaults DefaultCPU, DefaultMemory, DefaultPods.
	CPU    int
	Memory resource.Quantity
	Pods   int
	// Labels are added to each Node at registration (DefaultNodeLabel is
	// always set); Taints are set at registration.
	Labels map[string]string
	Taints []v1.Taint

	// Provider runs the pods. Required (package simulated has one whose
	// pods live in memory).
	Provider Provider

	// StatusWorkers bounds the node status syncs in flight; default 8.
	StatusWorkers int
	// StatusUpdateFrequency is how often each node's status is computed
	// (it is patched only on change or every 5 minutes); default 10s.
	StatusUpdateFrequency time.Duration
	// LeaseDuration is each lease's duration; they are renewed every
	// quarter of it. Default 40s, like the kubelet.
	LeaseDuration time.Duration
	// LeaseSpread staggers the first renewals; default 10s (at most a
	// renew interval).
	LeaseSpread time.Duration
	// LeaseWorkers bounds the lease renewals in flight; default 8, or one
	// per NodesPerLeaseWorker nodes when that is more: the nodes need
	// len(Nodes)/10 renewals a second (a 40s lease), and a renewal holds
	// its worker for the request's round trip, which grows when the API
	// server is busy (with 5,000 nodes and 8 workers, the renewals fell a
	// minute behind while 10,000 pods were created).
	LeaseWorkers int
	// LeaseBatchWindow lets the lease controller renew, with a lease that
	// is due, the leases due within this window after it (up to the window
	// early, never late; lease.Config.BatchWindow): many leases then cost
	// fewer wake-ups. Default DefaultLeaseBatchWindow, or a quarter of the
	// renew interval if that is less; negative: each lease on its own due
	// time.
	LeaseBatchWindow time.Duration
	// MaxConcurrentSyncs bounds the pod worker goroutines (a pod waiting
	// out its grace period holds one); default 256.
	MaxConcurrentSyncs int
	// PodResyncInterval is podworkers' resync period; default 1m.
	PodResyncInterval time.Duration
	// TrimPodStatus keeps, of each pod's status in the agent's cache, only
	// what the agent reads (phase, reason, message, QoS class), what a
	// provider needs to adopt a running pod after a restart or a shard
	// takeover (start time, pod and host IPs), and what the agent does not
	// write (conditions the kubelet does not own, the nominated node,
	// resource claim statuses). Without it each pod's full status is kept
	// (a one-container Running pod's encodes to about 0.4 KB, as much as
	// the rest of the pod). The pods handed to the Provider's methods then
	// carry the trimmed status (the kubelet API's handlers get the status
	// the agent reports): leave it false if the provider reads the API's
	// conditions or container statuses.
	TrimPodStatus bool

	// API, if set, serves the kubelet API (kubectl logs, exec) of every
	// node from one server, and the nodes report its port; nil: not
	// served, the nodes report port 0.
	API *APIConfig

	// Clock drives every timer; default the real clock.
	Clock clock.WithTicker
	// Registerer receives the lease and pod worker metrics; nil: none.
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() error {
	if c.Client == nil {
		return fmt.Errorf("%w: Client is required", ErrInvalidConfig)
	}
	if c.Provider == nil {
		return fmt.Errorf("%w: Provider is required", ErrInvalidConfig)
	}
	if len(c.Nodes) == 0 {
		return fmt.Errorf("%w: no Nodes", ErrInvalidConfig)
	}
	seen := make(map[string]struct{}, len(c.Nodes))
	for _, n := range c.Nodes {
		if n == "" {
			return fmt.Errorf("%w: empty node name", ErrInvalidConfig)
		}
		if _, dup := seen[n]; dup {
			return fmt.Errorf("%w: node %q twice", ErrInvalidConfig, n)
		}
		seen[n] = struct{}{}
	}
	if c.CPU < 0 || c.Pods < 0 || c.Memory.Sign() < 0 || c.StatusWorkers < 0 || c.MaxConcurrentSyncs < 0 ||
		c.LeaseWorkers < 0 || c.StatusUpdateFrequency < 0 || c.LeaseSpread < 0 || c.LeaseDuration < 0 || c.PodResyncInterval < 0 {
		return fmt.Errorf("%w: negative value", ErrInvalidConfig)
	}
	if c.HeartbeatClient == nil {
		c.HeartbeatClient = c.Client
	}
	if c.NodeIP == nil {
		c.NodeIP = defaultNodeIP
	}
	if c.CPU == 0 {
		c.CPU = DefaultCPU
	}
	if c.Memory.IsZero() {
		c.Memory = resource.MustParse(DefaultMemory)
	}
	if c.Pods == 0 {
		c.Pods = DefaultPods
	}
	if c.StatusWorkers == 0 {
		c.StatusWorkers = DefaultStatusWorkers
	}
	if c.StatusUpdateFrequency == 0 {
		c.StatusUpdateFrequency = 10 * time.Second
	}
	if c.LeaseWorkers == 0 {
		c.LeaseWorkers = max(lease.DefaultWorkers, len(c.Nodes)/NodesPerLeaseWorker)
	}
	if c.LeaseBatchWindow == 0 {
		c.LeaseBatchWindow = DefaultLeaseBatchWindow
		if c.LeaseDuration > 0 { // a quarter of the renew interval at most
			c.LeaseBatchWindow = min(c.LeaseBatchWindow, c.LeaseDuration/16)
		}
	}
	if c.LeaseSpread == 0 {
		c.LeaseSpread = DefaultLeaseSpread
		if c.LeaseDuration > 0 && c.LeaseDuration/4 < c.LeaseSpread {
			c.LeaseSpread = c.LeaseDuration / 4
		}
	}
	if c.MaxConcurrentSyncs == 0 {
		c.MaxConcurrentSyncs = DefaultMaxConcurrentSyncs
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.API != nil {
		api := *c.API // defaults go to a copy
		if err := api.validate(); err != nil {
			return err
		}
		c.API = &api
	}
	return nil
}

// defaultNodeIP numbers the nodes from 172.16.0.1.
func defaultNodeIP(i int) string {
	n := uint32(172<<24|16<<16) + uint32(i%(1<<20-2)) + 1
	return fmt.Sprintf("%d.%d.%d.%d", n>>24, n>>16&0xff, n>>8&0xff, n&0xff)
}
