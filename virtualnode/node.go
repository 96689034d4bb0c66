package virtualnode

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync/atomic"
	"time"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit/nodekit/nodestatus"
)

// node is one virtual node's status controller and its schedule.
type node struct {
	name string
	ctl  *nodestatus.Controller
	// busy is set while a status worker has the node; due, the time of
	// its next sync, belongs to the worker while busy and to the status
	// loop otherwise.
	due  time.Time
	busy atomic.Bool
}

// nodeCommon is what every node of an agent shares, read only: a
// thousand nodes need one of each, not a thousand.
type nodeCommon struct {
	storage v1.ResourceList
	labels  map[string]string
	// codec keeps each node's last-known Node coded against the first's.
	codec *nodeCodec
}

func newNodeCommon(cfg *Config) *nodeCommon {
	labels := map[string]string{DefaultNodeLabel: "true"}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	return &nodeCommon{
		storage: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(DefaultEphemeralStorage)},
		labels:  labels,
		codec:   &nodeCodec{},
	}
}

// newNode builds the nodestatus controller of the i-th node: fixed
// capacity, Go runtime, the kubelet API's port, no pressure, Ready from the
// provider's health.
func newNode(cfg *Config, common *nodeCommon, i int, name string, apiPort *atomic.Int32, setUID func(string, types.UID)) (*node, error) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	id := fmt.Sprintf("%016x", h.Sum64())
	never := func() bool { return false }
	ip := cfg.NodeIP(i)
	var b nodestatus.Builder
	b.Add(nodestatus.MachineInfo(nodestatus.MachineConfig{
		// Built per status computation (every StatusUpdateFrequency)
		// rather than kept: the struct is 1 KB a node.
		Machine: func() (*cadvisorapi.MachineInfo, error) {
			return &cadvisorapi.MachineInfo{NumCores: cfg.CPU, MemoryCapacity: uint64(cfg.Memory.Value()),
				MachineID: id, SystemUUID: id, BootID: "virtual"}, nil
		},
		MaxPods:  cfg.Pods,
		Capacity: func() v1.ResourceList { return common.storage },
	}))
	b.Add(nodestatus.GoRuntime(), nil)
	b.Add(func(_ context.Context, _ time.Time, n *v1.Node) error {
		n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}, {Type: v1.NodeHostName, Address: name}}
		n.Status.NodeInfo.KubeletVersion = nodestatus.DefaultKubeletVersion
		n.Status.NodeInfo.ContainerRuntimeVersion = "virtual://nodekit"
		n.Status.DaemonEndpoints.KubeletEndpoint.Port = apiPort.Load()
		return nil
	}, nil)
	b.Add(nodestatus.MemoryPressureCondition(never, nil))
	b.Add(nodestatus.DiskPressureCondition(never, nil))
	b.Add(nodestatus.PIDPressureCondition(never, nil))
	b.Add(nodestatus.ReadyCondition(nodestatus.ReadyConfig{RuntimeErrors: cfg.Provider.Healthy}))
	setters, err := b.Setters()
	if err != nil {
		return nil, fmt.Errorf("virtualnode: node %s: %w", name, err)
	}
	var annotations map[string]string
	if _, ok := cfg.Provider.(StatsProvider); ok && cfg.API != nil {
		annotations = map[string]string{AnnotationResourceMetricsPath: resourceMetricsPath(name)}
	}
	ctl, err := nodestatus.New(nodestatus.Config{Client: cfg.Client, HeartbeatClient: cfg.HeartbeatClient,
		NodeName: name, Labels: common.labels, Annotations: annotations, Taints: cfg.Taints, Setters: setters, DisableAttachDetachAnnotation: true,
		UpdateFrequency: cfg.StatusUpdateFrequency, Clock: cfg.Clock, Codec: common.codec,
		OnRegistered: func(n *v1.Node) { setUID(n.Name, n.UID) }})
	if err != nil {
		return nil, fmt.Errorf("virtualnode: node %s: %w", name, err)
	}
	return &node{name: name, ctl: ctl}, nil
}
