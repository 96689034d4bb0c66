package csi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodekit/nodekit/clockctx"
)

// ErrInvalidConfig wraps every error a constructor returns for a bad
// Config.
var ErrInvalidConfig = errors.New("csi: invalid config")

// DefaultTimeout bounds each call to a driver, as the kubelet's csiTimeout.
const DefaultTimeout = 2 * time.Minute

// DriversConfig configures a Drivers registry.
type DriversConfig struct {
	// Client writes the node's CSI information (the CSINode object, the
	// node's csi.volume.kubernetes.io/nodeid annotation and topology
	// labels), as the node identity. nil: nothing is written (a
	// standalone node).
	Client kubernetes.Interface
	// NodeName is the Node the information is about. Required with Client.
	NodeName string
	// Clock bounds the calls to the drivers. Default the real clock.
	Clock clock.WithTicker
	// Timeout bounds each call to a driver; default DefaultTimeout.
	Timeout time.Duration
}

// Drivers is the registry of the node's CSI drivers: a
// pluginwatch.Handler for plugins of type "CSIPlugin". Registering a
// driver asks it for its node ID, volume limit and topology and publishes
// them as the kubelet does; deregistering removes them. A driver is
// registered only with a valid name, from a Unix socket, and does not
// replace a registered driver of the same name from another socket
// unless it offers a higher version.
type Drivers struct {
	cfg DriversConfig

	mu      sync.Mutex
	drivers map[string]*driver
	// names holds a lock per driver name, serialising the registrations
	// and deregistrations of one name (so the checks of one hold until
	// its driver is in place) while a driver slow to answer holds up no
	// other.
	names map[string]*sync.Mutex
}

// lockName locks the registrations of name and returns the unlock.
func (d *Drivers) lockName(name string) func() {
	d.mu.Lock()
	l := d.names[name]
	if l == nil {
		l = &sync.Mutex{}
		d.names[name] = l
	}
	d.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// driver is a registered driver's connection.
type driver struct {
	name     string
	endpoint string // the socket's path, cleaned
	version  *utilversion.Version
	conn     *grpc.ClientConn
	node     csipb.NodeClient
}

// NewDrivers checks cfg and returns an empty registry.
func NewDrivers(cfg DriversConfig) (*Drivers, error) {
	if cfg.Client != nil && cfg.NodeName == "" {
		return nil, fmt.Errorf("%w: NodeName is required with a Client", ErrInvalidConfig)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: Timeout %v is negative", ErrInvalidConfig, cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Drivers{cfg: cfg, drivers: map[string]*driver{}, names: map[string]*sync.Mutex{}}, nil
}

// ValidatePlugin accepts a driver with a valid name (a DNS-1123
// subdomain of at most 63 characters) whose endpoint is a Unix socket
// and which speaks CSI 1.x, unless a driver of the same name is
// registered from another socket with a version not lower than this
// one's highest.
func (d *Drivers) ValidatePlugin(name, endpoint string, versions []string) error {
	_, _, err := d.admit("ValidatePlugin", name, endpoint, versions)
	return err
}

// admit checks a registration as ValidatePlugin says and returns the
// socket's path and the highest version offered.
func (d *Drivers) admit(caller, name, endpoint string, versions []string) (string, *utilversion.Version, error) {
	if err := checkDriverName(name); err != nil {
		return "", nil, fmt.Errorf("%s for CSI driver %q failed: %w", caller, name, err)
	}
	path, err := socketPath(endpoint)
	if err != nil {
		return "", nil, fmt.Errorf("%s for CSI driver %q failed: %w", caller, name, err)
	}
	version, err := utilversion.HighestSupportedVersion(versions)
	if err != nil {
		return "", nil, fmt.Errorf("%s for CSI driver %q failed: none of the versions %q is supported (want 1.x): %w",
			caller, name, versions, err)
	}
	d.mu.Lock()
	old := d.drivers[name]
	d.mu.Unlock()
	if old != nil && old.endpoint != path && !old.version.LessThan(version) {
		return "", nil, fmt.Errorf("%s for CSI driver %q failed: %w at %s with supported version %q, not lower than %q offered at %s",
			caller, name, ErrAlreadyRegistered, old.endpoint, old.version, version, path)
	}
	return path, version, nil
}

// RegisterPlugin checks the driver as ValidatePlugin does, connects to
// its Unix socket, reads its node information (NodeGetInfo) and publishes
// it: the driver's entry in the CSINode object (node ID, topology keys,
// the volume limit as its allocatable count), the node's
// csi.volume.kubernetes.io/nodeid annotation and topology labels. A
// topology label the Node has with another value fails the registration
// (ErrTopologyCollision) and leaves the Node and the CSINode as they
// were. The driver's volumes can be mounted from then on; it replaces a
// driver of the same name registered before.
func (d *Drivers) RegisterPlugin(ctx context.Context, name, endpoint string, versions []string) error {
	defer d.lockName(name)()
	path, version, err := d.admit("RegisterPlugin", name, endpoint, versions)
	if err != nil {
		return err
	}
	conn, err := dialUnix(path)
	if err != nil {
		return fmt.Errorf("connect to CSI driver %s at %s: %w", name, path, err)
	}
	drv := &driver{name: name, endpoint: path, version: version, conn: conn, node: csipb.NewNodeClient(conn)}
	info, err := d.nodeInfo(ctx, drv)
	if err == nil && d.cfg.Client != nil {
		err = d.installNodeInfo(ctx, name, info)
	}
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("CSI driver %s: %w", name, err)
	}
	d.mu.Lock()
	old := d.drivers[name]
	d.drivers[name] = drv
	d.mu.Unlock()
	if old != nil {
		_ = old.conn.Close()
	}
	klog.FromContext(ctx).V(2).Info("Registered CSI driver", "driver", name, "endpoint", path, "version", version, "nodeID", info.GetNodeId())
	return nil
}

// dialUnix makes a client of the Unix socket at path, and nothing else:
// the target is never resolved, whatever it looks like.
func dialUnix(path string) (*grpc.ClientConn, error) {
	dial := func(ctx context.Context, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
	return grpc.NewClient("passthrough:///localhost", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dial))
}

// nodeInfo asks a driver for its node information and checks it.
func (d *Drivers) nodeInfo(ctx context.Context, drv *driver) (*csipb.NodeGetInfoResponse, error) {
	callCtx, cancel := clockctx.WithTimeout(ctx, d.cfg.Clock, d.cfg.Timeout)
	defer cancel()
	info, err := drv.node.NodeGetInfo(callCtx, &csipb.NodeGetInfoRequest{})
	switch {
	case err != nil:
		return nil, err
	case info.GetNodeId() == "":
		return nil, errors.New("the driver returned an empty node ID")
	case info.GetMaxVolumesPerNode() < 0:
		return nil, fmt.Errorf("the driver returned a negative maximum of volumes per node (%d)", info.GetMaxVolumesPerNode())
	}
	return info, nil
}

// DeregisterPlugin forgets the driver registered at endpoint and removes
// its entry from the CSINode object and the node annotation (topology
// labels stay, as upstream).
func (d *Drivers) DeregisterPlugin(ctx context.Context, name, endpoint string) {
	defer d.lockName(name)()
	path, err := socketPath(endpoint)
	if err != nil {
		return // nothing is registered from there
	}
	d.mu.Lock()
	drv := d.drivers[name]
	if drv == nil || drv.endpoint != path {
		d.mu.Unlock()
		return // replaced by a newer registration meanwhile
	}
	delete(d.drivers, name)
	d.mu.Unlock()
	_ = drv.conn.Close()
	if d.cfg.Client != nil {
		if err := d.uninstallNodeInfo(ctx, name); err != nil {
			klog.FromContext(ctx).Info("Failed to remove a deregistered CSI driver from the node's CSI information", "driver", name, "err", err)
		}
	}
	klog.FromContext(ctx).V(2).Info("Deregistered CSI driver", "driver", name)
}

// Names lists the registered drivers.
func (d *Drivers) Names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.drivers))
	for n := range d.drivers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Close closes the connections to the drivers.
func (d *Drivers) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for n, drv := range d.drivers {
		_ = drv.conn.Close()
		delete(d.drivers, n)
	}
}

// node returns the node service of a registered driver.
func (d *Drivers) node(name string) (csipb.NodeClient, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	drv := d.drivers[name]
	if drv == nil {
		return nil, fmt.Errorf("driver name %s not found in the list of registered CSI drivers", name)
	}
	return drv.node, nil
}

// nodeIDAnnotation maps each driver to its node ID, as JSON, on the Node.
const nodeIDAnnotation = "csi.volume.kubernetes.io/nodeid"
