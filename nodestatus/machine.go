package nodestatus

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
)

// DefaultMaxPods is the kubelet's default --max-pods.
const DefaultMaxPods = 110

// MachineConfig configures MachineInfo. Each func is called on every status
// computation (every 10s): cache inside it if it is expensive.
type MachineConfig struct {
	// Machine describes the hardware: cores, memory, hugepages, swap,
	// machine/system/boot IDs. Required. The cadvisorinfo subpackage reads
	// the real machine with cadvisor.
	Machine func() (*cadvisorapi.MachineInfo, error)
	// MaxPods caps the pods capacity. Zero means DefaultMaxPods (110).
	MaxPods int
	// PodsPerCore, if positive, limits pods to cores×PodsPerCore (never more
	// than MaxPods). Zero disables the limit, as the kubelet's default.
	PodsPerCore int
	// Capacity adds capacity the machine description lacks, typically
	// ephemeral-storage of the kubelet's root filesystem. Optional.
	Capacity func() v1.ResourceList
	// Extended reports device-plugin style resources: capacity, allocatable
	// and the names of resources whose plugin went away (reported as 0).
	// Optional.
	Extended func() (capacity, allocatable v1.ResourceList, removed []string)
	// Reserved is subtracted from capacity to give allocatable: system and
	// kube reservations plus the hard eviction thresholds
	// (eviction.HardReservation), given the capacity (a threshold may be
	// a percentage of it). Optional.
	Reserved func(capacity v1.ResourceList) v1.ResourceList
	// Recorder receives the Rebooted event. Optional.
	Recorder Recorder
}

// MachineInfo returns the setter of capacity, allocatable and the machine,
// system and boot IDs, with the kubelet's arithmetic: pods = min(cores ×
// podsPerCore, maxPods), allocatable = capacity − reserved (never negative)
// with hugepages also taken out of memory, extended resources that left
// capacity removed from allocatable. If the machine cannot be read, cpu and
// memory are reported as 0 so the node cannot be scheduled, and the error
// is returned. A changed boot ID emits one Rebooted warning event.
func MachineInfo(cfg MachineConfig) (Setter, error) {
	if cfg.Machine == nil {
		return nil, invalid("MachineInfo: Machine func is required")
	}
	if cfg.MaxPods < 0 || cfg.PodsPerCore < 0 {
		return nil, invalid("MachineInfo: MaxPods (%d) and PodsPerCore (%d) must not be negative", cfg.MaxPods, cfg.PodsPerCore)
	}
	if cfg.MaxPods == 0 {
		cfg.MaxPods = DefaultMaxPods
	}
	m := &machineSetter{cfg: cfg}
	return m.set, nil
}

type machineSetter struct {
	cfg        MachineConfig
	rebootOnce sync.Once
}

func (m *machineSetter) set(ctx context.Context, _ time.Time, node *v1.Node) error {
	if node.Status.Capacity == nil {
		node.Status.Capacity = v1.ResourceList{}
	}
	info, err := m.cfg.Machine()
	if err != nil {
		node.Status.Capacity[v1.ResourceCPU] = *resource.NewMilliQuantity(0, resource.DecimalSI)
		node.Status.Capacity[v1.ResourceMemory] = *resource.NewQuantity(0, resource.BinarySI)
		node.Status.Capacity[v1.ResourcePods] = *resource.NewQuantity(int64(m.cfg.MaxPods), resource.DecimalSI)
		err = fmt.Errorf("error getting machine info: %w", err)
	} else {
		m.fromMachine(ctx, node, info)
	}
	m.setAllocatable(node)
	return err
}

func (m *machineSetter) fromMachine(ctx context.Context, node *v1.Node, info *cadvisorapi.MachineInfo) {
	node.Status.NodeInfo.MachineID = info.MachineID
	node.Status.NodeInfo.SystemUUID = info.SystemUUID
	for name, q := range CapacityFromMachine(info) {
		node.Status.Capacity[name] = q
	}
	pods := m.cfg.MaxPods
	if m.cfg.PodsPerCore > 0 {
		pods = min(info.NumCores*m.cfg.PodsPerCore, m.cfg.MaxPods)
	}
	node.Status.Capacity[v1.ResourcePods] = *resource.NewQuantity(int64(pods), resource.DecimalSI)
	if old := node.Status.NodeInfo.BootID; old != "" && old != info.BootID {
		m.rebootOnce.Do(func() {
			m.cfg.Recorder.record(v1.EventTypeWarning, "Rebooted",
				fmt.Sprintf("Node %s has been rebooted, boot id: %s", node.Name, info.BootID))
		})
	}
	node.Status.NodeInfo.BootID = info.BootID
	if m.cfg.Capacity != nil {
		for name, q := range m.cfg.Capacity() {
			node.Status.Capacity[name] = q
		}
	}
	if m.cfg.Extended != nil {
		capacity, _, removed := m.cfg.Extended()
		for name, q := range capacity {
			node.Status.Capacity[name] = q
		}
		for _, name := range removed {
			klog.FromContext(ctx).V(2).Info("Set capacity of a removed device resource to 0", "resource", name)
			node.Status.Capacity[v1.ResourceName(name)] = *resource.NewQuantity(0, resource.DecimalSI)
		}
	}
	if info.SwapCapacity != 0 {
		swap := int64(info.SwapCapacity)
		node.Status.NodeInfo.Swap = &v1.NodeSwapStatus{Capacity: &swap}
	}
}

func (m *machineSetter) setAllocatable(node *v1.Node) {
	if node.Status.Allocatable == nil {
		node.Status.Allocatable = v1.ResourceList{}
	}
	for name := range node.Status.Allocatable {
		if _, ok := node.Status.Capacity[name]; !ok && isExtendedResource(name) {
			delete(node.Status.Allocatable, name)
		}
	}
	var reserved v1.ResourceList
	if m.cfg.Reserved != nil {
		reserved = m.cfg.Reserved(node.Status.Capacity)
	}
	for name, q := range node.Status.Capacity {
		v := q.DeepCopy()
		if r, ok := reserved[name]; ok {
			v.Sub(r)
		}
		if v.Sign() < 0 {
			v.Set(0)
		}
		node.Status.Allocatable[name] = v
	}
	if m.cfg.Extended != nil {
		_, allocatable, _ := m.cfg.Extended()
		for name, q := range allocatable {
			node.Status.Allocatable[name] = q
		}
	}
	for name, q := range node.Status.Capacity {
		if !strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
			continue
		}
		mem := node.Status.Allocatable[v1.ResourceMemory]
		mem.Sub(q)
		if mem.Sign() < 0 {
			mem.Set(0)
		}
		node.Status.Allocatable[v1.ResourceMemory] = mem
	}
}

// CapacityFromMachine converts a machine description to cpu, memory and
// hugepages-<size> capacity, as the kubelet reports them.
func CapacityFromMachine(info *cadvisorapi.MachineInfo) v1.ResourceList {
	c := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(int64(info.NumCores)*1000, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(int64(info.MemoryCapacity), resource.BinarySI),
	}
	for _, hp := range info.HugePages {
		pageBytes := int64(hp.PageSize) * 1024
		size := resource.NewQuantity(pageBytes, resource.BinarySI)
		c[v1.ResourceName(v1.ResourceHugePagesPrefix+size.String())] = *resource.NewQuantity(pageBytes*int64(hp.NumPages), resource.BinarySI)
	}
	return c
}

// isExtendedResource mirrors the API's rule: a fully qualified name outside
// the kubernetes.io/ domain and not a requests. prefix.
func isExtendedResource(name v1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.HasPrefix(s, "requests.") {
		return false
	}
	domain := s[:strings.Index(s, "/")]
	return domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}
