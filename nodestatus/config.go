package nodestatus

import (
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/kubeclient"
)

// Defaults of the kubelet.
const (
	// DefaultUpdateFrequency is how often status is computed
	// (--node-status-update-frequency).
	DefaultUpdateFrequency = 10 * time.Second
	// DefaultReportFrequency is how often an unchanged status is reported
	// anyway (nodeStatusReportFrequency).
	DefaultReportFrequency = 5 * time.Minute
	// DefaultFastUpdateInterval is the period of the start-up path that
	// reports Ready as soon as the setters say so.
	DefaultFastUpdateInterval = 100 * time.Millisecond
	// DefaultNodeReadyGracePeriod bounds the fast start-up path.
	DefaultNodeReadyGracePeriod = 120 * time.Second
	// DefaultReportJitter is the kubelet's spread of the next report after a
	// change: ±50% of ReportFrequency.
	DefaultReportJitter = 0.5
	// UpdateRetries is how many tries one status update makes.
	UpdateRetries = 5
)

// NodeGetter reads a cached copy of the Node; a client-go NodeLister
// satisfies it.
type NodeGetter interface {
	Get(name string) (*v1.Node, error)
}

// Config configures a Controller. Zero fields take the kubelet's defaults.
type Config struct {
	// Client creates, reads and reconciles the Node. Required:
	// kubeclient.NewForConfig, or a client-go clientset through
	// kubeclient/clientset.Wrap.
	Client kubeclient.NodesGetter
	// HeartbeatClient sends status patches and the reads of retries; use a
	// client without rate limiting and with a short timeout (see
	// lease.HeartbeatRESTConfig). Default Client.
	HeartbeatClient kubeclient.NodesGetter
	// NodeName is the Node's name. Required.
	NodeName string
	// Hostname is the kubernetes.io/hostname label. Default NodeName.
	Hostname string
	// Labels are added to the default labels at registration (and win over
	// them).
	Labels map[string]string
	// Taints are set at registration (--register-with-taints).
	Taints []v1.Taint
	// Annotations are set at registration and reconciled on an existing
	// Node.
	Annotations map[string]string
	// ProviderID is spec.providerID at registration.
	ProviderID string
	// DisableAttachDetachAnnotation leaves out the
	// volumes.kubernetes.io/controller-managed-attach-detach annotation the
	// kubelet sets by default.
	DisableAttachDetachAnnotation bool
	// Setters compute the status, in order (put ReadyCondition after the
	// setters it depends on; the Ready condition is moved last anyway).
	Setters []Setter
	// Lister, if set, is read for the first try of each update instead of
	// the controller's last-known copy (the kubelet reads its informer).
	Lister NodeGetter
	// DisableRegistration: the Node is created by someone else
	// (--register-node=false); the controller only updates status.
	DisableRegistration bool
	// ResetExtendedResources, if set and true when the Node is found
	// already registered, zeroes the capacity and allocatable of its
	// extended resources (device-plugin resources such as GPUs) until
	// their providers report again: upstream does so when the device
	// manager has no checkpoint, i.e. the node or agent state was
	// recreated, so that pods are not scheduled onto devices that no
	// longer exist.
	ResetExtendedResources func() bool
	// UpdateFrequency is the status computation period. Default 10s.
	UpdateFrequency time.Duration
	// ReportFrequency is the longest time without a status patch. Default
	// 5m. After a change the next unforced report is jittered by ±50%.
	ReportFrequency time.Duration
	// FastUpdateInterval is the start-up period while the Node is not yet
	// reported Ready. Default 100ms.
	FastUpdateInterval time.Duration
	// NodeReadyGracePeriod ends the fast start-up path. Default 120s.
	NodeReadyGracePeriod time.Duration
	// RequestTimeout bounds each API request on Clock. Default
	// UpdateFrequency.
	RequestTimeout time.Duration
	// Clock drives every period, backoff and timeout. Default real clock.
	Clock clock.WithTicker
	// ReportJitter spreads the next unforced report after a change over
	// ReportFrequency·(1 ± ReportJitter); default 0.5 like the kubelet.
	// Negative disables jitter (reports exactly every ReportFrequency).
	ReportJitter float64
	// Rand returns a float in [0,1) that picks the point in the jitter
	// window (0: its start, ReportFrequency·(1−ReportJitter)). Default
	// math/rand/v2.Float64. To turn jitter off, set ReportJitter negative.
	Rand func() float64
	// OnRegistered is called, synchronously, with a copy of the Node once
	// it is registered (created, or found already there) and again if it
	// was recreated with a new UID. A lease controller's SetNodeUID fits:
	//
	//	OnRegistered: func(n *v1.Node) { leases.SetNodeUID(n.Name, n.UID) }
	//
	// so the Lease gets its owner reference at once instead of after a
	// lookup retry. It must not block. (client-go's fake clientset assigns
	// no UIDs: a test gives created Nodes one with a "create" reactor, or
	// the Lease stays without owner, since an empty UID means none.)
	OnRegistered func(node *v1.Node)
	// OnRepeatedFailure is called, synchronously, for the second and later
	// failed tries of one update (the kubelet closes its connections
	// there). It must not block.
	OnRepeatedFailure func(err error)
	// View, if set, is kept at the Node as last read or written, for the
	// parts of the agent that read the node.
	View *View
	// Codec, if set, transforms the protobuf encoding of the last-known
	// Node that the controller keeps between passes, and back. The
	// controllers of many similar nodes (a virtual node agent's thousand)
	// can share one that codes each encoding against a common reference.
	// Nil keeps the encoding itself.
	Codec Codec
}

// Codec keeps the protobuf encoding of a Node in another form
// (Config.Codec). Its methods are called concurrently by the controllers
// sharing it.
type Codec interface {
	// Encode returns the form to keep of raw; it must not retain raw.
	Encode(raw []byte) ([]byte, error)
	// Decode appends to dst the encoding kept as kept, and returns it.
	Decode(dst, kept []byte) ([]byte, error)
}

func (c *Config) defaults() error {
	switch {
	case c.Client == nil:
		return invalid("Client is required")
	case c.NodeName == "":
		return invalid("NodeName is required")
	case c.UpdateFrequency < 0, c.ReportFrequency < 0, c.FastUpdateInterval < 0, c.NodeReadyGracePeriod < 0, c.RequestTimeout < 0:
		return invalid("durations must not be negative (update %v, report %v, fast %v, grace %v, request %v)",
			c.UpdateFrequency, c.ReportFrequency, c.FastUpdateInterval, c.NodeReadyGracePeriod, c.RequestTimeout)
	}
	for i, s := range c.Setters {
		if s == nil {
			return invalid("Setters[%d] is nil", i)
		}
	}
	if c.HeartbeatClient == nil {
		c.HeartbeatClient = c.Client
	}
	if c.Hostname == "" {
		c.Hostname = c.NodeName
	}
	setDefault(&c.UpdateFrequency, DefaultUpdateFrequency)
	setDefault(&c.ReportFrequency, DefaultReportFrequency)
	setDefault(&c.FastUpdateInterval, DefaultFastUpdateInterval)
	setDefault(&c.NodeReadyGracePeriod, DefaultNodeReadyGracePeriod)
	setDefault(&c.RequestTimeout, c.UpdateFrequency)
	if c.ReportFrequency < c.UpdateFrequency {
		return invalid("ReportFrequency %v is shorter than UpdateFrequency %v", c.ReportFrequency, c.UpdateFrequency)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	switch {
	case c.ReportJitter == 0:
		c.ReportJitter = DefaultReportJitter
	case c.ReportJitter < 0:
		c.ReportJitter = 0
	case c.ReportJitter >= 1:
		return invalid("ReportJitter %v must be below 1", c.ReportJitter)
	}
	return nil
}

func setDefault(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}
