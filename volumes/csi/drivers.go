package csi

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
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
// them as the kubelet does; deregistering removes them.
type Drivers struct {
	cfg DriversConfig

	mu      sync.Mutex
	drivers map[string]*driver
}

// driver is a registered driver's connection.
type driver struct {
	name, endpoint string
	conn           *grpc.ClientConn
	node           csipb.NodeClient
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
	return &Drivers{cfg: cfg, drivers: map[string]*driver{}}, nil
}

// ValidatePlugin accepts a driver that names itself and speaks CSI 1.x.
func (d *Drivers) ValidatePlugin(name, _ string, versions []string) error {
	if name == "" {
		return errors.New("the CSI driver has no name")
	}
	for _, v := range versions {
		if major, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), "."); major == "1" {
			return nil
		}
	}
	return fmt.Errorf("none of the versions %v of CSI driver %s is supported (want 1.x)", versions, name)
}

// RegisterPlugin connects to the driver at endpoint, reads its node
// information (NodeGetInfo) and publishes it: the driver's entry in the
// CSINode object (node ID, topology keys, the volume limit as its
// allocatable count), the node's csi.volume.kubernetes.io/nodeid
// annotation and topology labels. The driver's volumes can be mounted
// from then on.
func (d *Drivers) RegisterPlugin(ctx context.Context, name, endpoint string, _ []string) error {
	addr := endpoint
	if !strings.Contains(addr, "://") {
		addr = "unix://" + addr
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connect to CSI driver %s at %s: %w", name, endpoint, err)
	}
	drv := &driver{name: name, endpoint: endpoint, conn: conn, node: csipb.NewNodeClient(conn)}
	callCtx, cancel := clockctx.WithTimeout(ctx, d.cfg.Clock, d.cfg.Timeout)
	info, err := drv.node.NodeGetInfo(callCtx, &csipb.NodeGetInfoRequest{})
	cancel()
	if err == nil && info.GetNodeId() == "" {
		err = errors.New("the driver returned an empty node ID")
	}
	if err == nil && info.GetMaxVolumesPerNode() < 0 {
		err = fmt.Errorf("the driver returned a negative maximum of volumes per node (%d)", info.GetMaxVolumesPerNode())
	}
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
	klog.FromContext(ctx).V(2).Info("Registered CSI driver", "driver", name, "endpoint", endpoint, "nodeID", info.GetNodeId())
	return nil
}

// DeregisterPlugin forgets the driver registered at endpoint and removes
// its entry from the CSINode object and the node annotation (topology
// labels stay, as upstream).
func (d *Drivers) DeregisterPlugin(ctx context.Context, name, endpoint string) {
	d.mu.Lock()
	drv := d.drivers[name]
	if drv == nil || drv.endpoint != endpoint {
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
