package agent

import (
	"context"
	"errors"
	"net"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit/nodekit/eviction"
	"github.com/nodekit/nodekit/nodeclaim"
	"github.com/nodekit/nodekit/nodestatus"
	"github.com/nodekit/nodekit/nodestatus/cadvisorinfo"
)

func scheme() *runtime.Scheme { return clientgoscheme.Scheme }

// machine reads the machine's description and its storage capacity:
// cadvisor's, or made up for the simulator.
func (a *Agent) machine() (func() (*cadvisorapi.MachineInfo, error), func() v1.ResourceList) {
	if a.sim == nil {
		return cadvisorinfo.Machine(), cadvisorinfo.EphemeralStorage("/")
	}
	mem := a.opts.MemoryCapacity
	return func() (*cadvisorapi.MachineInfo, error) {
			return &cadvisorapi.MachineInfo{NumCores: 4, MemoryCapacity: uint64(mem), MachineID: "sim-" + a.opts.NodeName, BootID: "sim"}, nil
		}, func() v1.ResourceList {
			return v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
		}
}

// buildNodeStatus assembles the kubelet's setters over the agent's parts.
func (a *Agent) buildNodeStatus(ctx context.Context) error {
	rec := nodestatus.EventRecorder(a.recorder, a.opts.NodeName)
	clk := a.opts.Clock
	addr := nodestatus.AddressConfig{Hostname: a.hostname()}
	if a.opts.NodeIP != "" {
		addr.NodeIPs = []net.IP{net.ParseIP(a.opts.NodeIP)}
	}
	machine := nodestatus.MachineConfig{Recorder: rec, MaxPods: a.opts.MaxPods, Reserved: a.reserved}
	machine.Machine, machine.Capacity = a.machine()
	if a.sim != nil {
		addr.ValidateIP = func(net.IP) error { return nil } // a simulated address
	}
	id, err := nodeclaim.LoadID(a.opts.RootDir)
	if err != nil {
		return err
	}
	if a.claim, err = nodeclaim.New(nodeclaim.Config{Nodes: a.client.CoreV1(), Leases: a.client.CoordinationV1(),
		NodeName: a.opts.NodeName, ID: id, Clock: a.opts.Clock}); err != nil {
		return err
	}
	cri := a.criNode
	var b nodestatus.Builder
	b.Add(a.claim.Setter, nil) // first: a node taken over stops this agent
	b.Add(nodestatus.NodeAddress(addr))
	b.Add(nodestatus.MachineInfo(machine))
	b.Add(nodestatus.VersionInfo(nodestatus.VersionConfig{Runtime: func(ctx context.Context) (string, string, error) {
		name, version, err := cri.Version(ctx)
		if err != nil {
			return a.runtimeID, "", err
		}
		return name, version, nil
	}}))
	b.Add(nodestatus.DaemonEndpoints(int32(a.apiPort)))
	b.Add(nodestatus.Images(0, cri.Images))
	b.Add(nodestatus.GoRuntime(), nil)
	b.Add(nodestatus.MemoryPressureCondition(a.evict.IsUnderMemoryPressure, rec))
	b.Add(nodestatus.DiskPressureCondition(a.evict.IsUnderDiskPressure, rec))
	b.Add(nodestatus.PIDPressureCondition(a.evict.IsUnderPIDPressure, rec))
	b.Add(nodestatus.ReadyCondition(nodestatus.ReadyConfig{Recorder: rec,
		RuntimeErrors: func() error { return errors.Join(cri.RuntimeErrors(ctx), a.pleg.Healthy()) },
		NetworkErrors: func() error { return cri.NetworkErrors(ctx) }}))
	// After Ready, whose check refreshed the runtime's status.
	b.Add(nodestatus.RuntimeHandlers(cri.RuntimeHandlers))
	b.Add(nodestatus.NodeFeatures(cri.NodeFeatures))
	declared, err := declaredFeatures()
	if err != nil {
		return err
	}
	b.Add(nodestatus.DeclaredFeatures(declared), nil)
	b.Add(nodestatus.VolumesInUse(func() bool { return true }, a.volumes.InUse))
	setters, err := b.Setters()
	if err != nil {
		return err
	}
	a.nodeStatus, err = nodestatus.New(nodestatus.Config{Client: a.kube, NodeName: a.opts.NodeName,
		Hostname: a.hostname(), Labels: a.opts.NodeLabels, Taints: a.opts.RegisterWithTaints, ProviderID: a.opts.ProviderID,
		Annotations: a.claim.Annotations(),
		Setters:     setters, Clock: clk, OnRegistered: func(n *v1.Node) {
			a.lease.SetNodeUID(n.Name, n.UID)
			if a.registered != nil {
				a.onceReg.Do(func() { close(a.registered) })
			}
		}})
	return err
}

// simSummary replaces the host's memory figures with the simulated
// machine's: capacity from Options, usage the sum of the pods' working sets
// (as the simulator reports them), so memory pressure can be simulated.
type simSummary struct {
	inner    eviction.SummaryProvider
	capacity int64
}

func (s *simSummary) Get(ctx context.Context) (*statsapi.Summary, error) {
	sum, err := s.inner.Get(ctx)
	if err != nil {
		return nil, err
	}
	var used uint64
	for _, p := range sum.Pods {
		if p.Memory != nil && p.Memory.WorkingSetBytes != nil {
			used += *p.Memory.WorkingSetBytes
		}
	}
	capacity := uint64(s.capacity)
	avail := capacity - min(used, capacity)
	mem := sum.Node.Memory
	if mem == nil {
		mem = &statsapi.MemoryStats{}
		sum.Node.Memory = mem
	}
	mem.AvailableBytes, mem.WorkingSetBytes = &avail, &used
	mem.UsageBytes = &used
	return sum, nil
}

// hostname is the node's kubernetes.io/hostname (--hostname-override).
func (a *Agent) hostname() string {
	if a.opts.Hostname != "" {
		return a.opts.Hostname
	}
	return a.opts.NodeName
}

// reserved is what allocatable holds back from capacity: the system and
// kube reservations and the hard eviction thresholds, as the kubelet's
// node allocatable.
func (a *Agent) reserved(capacity v1.ResourceList) v1.ResourceList {
	return nodestatus.AddResources(a.opts.SystemReserved, a.opts.KubeReserved, eviction.HardReservation(a.hardEviction, capacity))
}
