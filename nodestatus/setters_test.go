package nodestatus

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

type event struct{ typ, reason, msg string }

func recorder(evs *[]event) Recorder {
	return func(t, r, m string) { *evs = append(*evs, event{t, r, m}) }
}

func acceptAll(net.IP) error { return nil }

func TestNodeAddressConfigErrors(t *testing.T) {
	for name, cfg := range map[string]AddressConfig{
		"no hostname":       {},
		"three ips":         {Hostname: "h", NodeIPs: []net.IP{net.ParseIP("10.0.0.1"), net.ParseIP("fd00::1"), net.ParseIP("10.0.0.2")}},
		"same family":       {Hostname: "h", NodeIPs: []net.IP{net.ParseIP("10.0.0.1"), net.ParseIP("10.0.0.2")}},
		"loopback":          {Hostname: "h", NodeIPs: []net.IP{net.ParseIP("127.0.0.1")}},
		"multicast":         {Hostname: "h", NodeIPs: []net.IP{net.ParseIP("224.0.0.1")}},
		"link-local":        {Hostname: "h", NodeIPs: []net.IP{net.ParseIP("169.254.1.1")}},
		"nil ip":            {Hostname: "h", NodeIPs: []net.IP{nil}},
		"secondary 0.0.0.0": {Hostname: "h", NodeIPs: []net.IP{net.ParseIP("fd00::1"), net.ParseIP("0.0.0.0")}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NodeAddress(cfg)
			require.ErrorIs(t, err, ErrInvalidConfig)
		})
	}
}

func TestNodeAddress(t *testing.T) {
	v4, v6 := net.ParseIP("10.1.2.3"), net.ParseIP("fd00::3")
	lookup := func(ips ...net.IP) func(string) ([]net.IP, error) {
		return func(string) ([]net.IP, error) { return ips, nil }
	}
	noResolve := func(net.IP) (net.IP, error) { return nil, errors.New("no default route") }
	for name, tc := range map[string]struct {
		cfg      AddressConfig
		existing []v1.NodeAddress
		want     []v1.NodeAddress
		wantErr  string
	}{
		"node ip": {cfg: AddressConfig{NodeIPs: []net.IP{v4}},
			want: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.1.2.3"}, {Type: v1.NodeHostName, Address: "host"}}},
		"dual stack": {cfg: AddressConfig{NodeIPs: []net.IP{v6, v4}},
			want: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "fd00::3"}, {Type: v1.NodeInternalIP, Address: "10.1.2.3"}, {Type: v1.NodeHostName, Address: "host"}}},
		"addresses replaced": {cfg: AddressConfig{NodeIPs: []net.IP{v4}}, existing: []v1.NodeAddress{{Type: v1.NodeExternalIP, Address: "1.1.1.1"}},
			want: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.1.2.3"}, {Type: v1.NodeHostName, Address: "host"}}},
		"dns prefers v4": {cfg: AddressConfig{LookupIP: lookup(v6, v4)},
			want: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.1.2.3"}, {Type: v1.NodeHostName, Address: "host"}}},
		"dns prefers v6 for ::": {cfg: AddressConfig{NodeIPs: []net.IP{net.ParseIP("::")}, LookupIP: lookup(v4, v6)},
			want: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "fd00::3"}, {Type: v1.NodeHostName, Address: "host"}}},
		"dns other family if only one": {cfg: AddressConfig{LookupIP: lookup(v6)},
			want: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "fd00::3"}, {Type: v1.NodeHostName, Address: "host"}}},
		"default route": {cfg: AddressConfig{LookupIP: lookup(), ResolveAddress: func(net.IP) (net.IP, error) { return v4, nil }},
			want: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.1.2.3"}, {Type: v1.NodeHostName, Address: "host"}}},
		"nothing found": {cfg: AddressConfig{LookupIP: lookup(), ResolveAddress: noResolve}, wantErr: "can't get ip address of node n1"},
		"invalid at set time": {cfg: AddressConfig{NodeIPs: []net.IP{v4}, ValidateIP: func(net.IP) error { return errors.New("not on this host") }},
			wantErr: "failed to validate nodeIP: not on this host"},
		"cloud keeps provider addresses": {cfg: AddressConfig{ExternalCloudProvider: true, NodeIPs: []net.IP{v4}},
			existing: []v1.NodeAddress{{Type: v1.NodeExternalIP, Address: "1.1.1.1"}},
			want:     []v1.NodeAddress{{Type: v1.NodeExternalIP, Address: "1.1.1.1"}}},
		"cloud without ip waits": {cfg: AddressConfig{ExternalCloudProvider: true},
			want: []v1.NodeAddress{{Type: v1.NodeHostName, Address: "host"}}},
	} {
		t.Run(name, func(t *testing.T) {
			tc.cfg.Hostname = "host"
			if tc.cfg.ValidateIP == nil {
				tc.cfg.ValidateIP = acceptAll
			}
			if tc.cfg.ResolveAddress == nil {
				tc.cfg.ResolveAddress = noResolve
			}
			if tc.cfg.LookupIP == nil {
				tc.cfg.LookupIP = lookup()
			}
			set, err := NodeAddress(tc.cfg)
			require.NoError(t, err)
			node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
			node.Status.Addresses = tc.existing
			err = set(context.Background(), time.Time{}, node)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, node.Status.Addresses)
			if tc.cfg.ExternalCloudProvider && len(tc.cfg.NodeIPs) > 0 {
				require.Equal(t, "10.1.2.3", node.Annotations[AnnotationProvidedIPAddr])
			}
		})
	}
}

func machine(cores int, mem uint64) func() (*cadvisorapi.MachineInfo, error) {
	return func() (*cadvisorapi.MachineInfo, error) {
		return &cadvisorapi.MachineInfo{NumCores: cores, MemoryCapacity: mem, MachineID: "mid", SystemUUID: "uuid", BootID: "boot1",
			HugePages: []cadvisorapi.HugePagesInfo{{PageSize: 2048, NumPages: 10}}}, nil
	}
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func TestMachineInfo(t *testing.T) {
	_, err := MachineInfo(MachineConfig{})
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = MachineInfo(MachineConfig{Machine: machine(1, 1), MaxPods: -1})
	require.ErrorIs(t, err, ErrInvalidConfig)

	var evs []event
	set, err := MachineInfo(MachineConfig{
		Machine:     machine(4, 8<<30),
		PodsPerCore: 10,
		Capacity:    func() v1.ResourceList { return v1.ResourceList{v1.ResourceEphemeralStorage: q("100Gi")} },
		Extended: func() (v1.ResourceList, v1.ResourceList, []string) {
			return v1.ResourceList{"example.com/gpu": q("2")}, v1.ResourceList{"example.com/gpu": q("1")}, []string{"example.com/old"}
		},
		Reserved: func(v1.ResourceList) v1.ResourceList {
			return v1.ResourceList{v1.ResourceCPU: q("500m"), v1.ResourceMemory: q("1Gi")}
		},
		Recorder: recorder(&evs),
	})
	require.NoError(t, err)
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	node.Status.Allocatable = v1.ResourceList{"example.com/gone": q("1")}
	require.NoError(t, set(context.Background(), time.Time{}, node))
	c, a := node.Status.Capacity, node.Status.Allocatable
	require.Equal(t, int64(4000), c.Cpu().MilliValue())
	require.Equal(t, int64(8<<30), c.Memory().Value())
	require.Equal(t, int64(40), c.Pods().Value(), "min(cores×podsPerCore, maxPods)")
	require.Equal(t, int64(20<<20), c.Name("hugepages-2Mi", resource.BinarySI).Value())
	require.Equal(t, int64(0), c.Name("example.com/old", resource.DecimalSI).Value())
	require.Equal(t, int64(3500), a.Cpu().MilliValue())
	require.Equal(t, int64(7<<30-20<<20), a.Memory().Value(), "reserved and hugepages out of memory")
	require.Equal(t, int64(1), a.Name("example.com/gpu", resource.DecimalSI).Value())
	require.NotContains(t, a, v1.ResourceName("example.com/gone"))
	require.Equal(t, "mid", node.Status.NodeInfo.MachineID)
	require.Equal(t, "boot1", node.Status.NodeInfo.BootID)
	require.Empty(t, evs)

	// A new boot ID: one Rebooted event, however often the setter runs.
	node.Status.NodeInfo.BootID = "boot0"
	require.NoError(t, set(context.Background(), time.Time{}, node))
	node.Status.NodeInfo.BootID = "boot0"
	require.NoError(t, set(context.Background(), time.Time{}, node))
	require.Equal(t, []event{{v1.EventTypeWarning, "Rebooted", "Node n1 has been rebooted, boot id: boot1"}}, evs)

	// MaxPods wins over cores×podsPerCore when smaller; no podsPerCore → maxPods.
	set, _ = MachineInfo(MachineConfig{Machine: machine(64, 1<<30), PodsPerCore: 10})
	node = &v1.Node{}
	require.NoError(t, set(context.Background(), time.Time{}, node))
	require.Equal(t, int64(110), node.Status.Capacity.Pods().Value())

	// Machine unreadable: zero cpu/memory, error returned.
	set, _ = MachineInfo(MachineConfig{Machine: func() (*cadvisorapi.MachineInfo, error) { return nil, errors.New("boom") }})
	node = &v1.Node{}
	require.ErrorContains(t, set(context.Background(), time.Time{}, node), "boom")
	require.True(t, node.Status.Capacity.Cpu().IsZero())
	require.Equal(t, int64(110), node.Status.Capacity.Pods().Value())
}

func TestVersionAndMisc(t *testing.T) {
	_, err := VersionInfo(VersionConfig{})
	require.ErrorIs(t, err, ErrInvalidConfig)
	set, err := VersionInfo(VersionConfig{
		Host:    func() (string, string, error) { return "6.1.0", "Debian GNU/Linux 13", nil },
		Runtime: func(context.Context) (string, string, error) { return "containerd", "", errors.New("down") },
	})
	require.NoError(t, err)
	node := &v1.Node{}
	//lint:ignore SA1019 a stale value the setter must clear
	node.Status.NodeInfo.KubeProxyVersion = "v1.20.0"
	require.NoError(t, set(context.Background(), time.Time{}, node))
	require.Equal(t, v1.NodeSystemInfo{KernelVersion: "6.1.0", OSImage: "Debian GNU/Linux 13",
		ContainerRuntimeVersion: "containerd://Unknown", KubeletVersion: DefaultKubeletVersion}, node.Status.NodeInfo)

	kernel, osImage, err := HostVersion()
	require.NoError(t, err)
	require.NotEmpty(t, kernel)
	require.NotEmpty(t, osImage)

	_, err = DaemonEndpoints(70000)
	require.ErrorIs(t, err, ErrInvalidConfig)
	set, _ = DaemonEndpoints(10250)
	require.NoError(t, set(context.Background(), time.Time{}, node))
	require.Equal(t, int32(10250), node.Status.DaemonEndpoints.KubeletEndpoint.Port)

	_, err = VolumesInUse(nil, nil)
	require.ErrorIs(t, err, ErrInvalidConfig)
	synced := false
	set, _ = VolumesInUse(func() bool { return synced }, func() []v1.UniqueVolumeName { return []v1.UniqueVolumeName{"vol"} })
	require.NoError(t, set(context.Background(), time.Time{}, node))
	require.Nil(t, node.Status.VolumesInUse)
	synced = true
	require.NoError(t, set(context.Background(), time.Time{}, node))
	require.Equal(t, []v1.UniqueVolumeName{"vol"}, node.Status.VolumesInUse)
}

func TestImages(t *testing.T) {
	_, err := Images(0, nil)
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = Images(-2, func(context.Context) ([]Image, error) { return nil, nil })
	require.ErrorIs(t, err, ErrInvalidConfig)
	var imgs []Image
	for i := range 60 {
		imgs = append(imgs, Image{Size: int64(i), RepoTags: []string{"t1", "t2", "t3", "t4"}, RepoDigests: []string{"d1", "d2"}})
	}
	set, err := Images(0, func(context.Context) ([]Image, error) { return imgs, nil })
	require.NoError(t, err)
	node := &v1.Node{}
	require.NoError(t, set(context.Background(), time.Time{}, node))
	require.Len(t, node.Status.Images, DefaultMaxImages)
	require.Equal(t, int64(59), node.Status.Images[0].SizeBytes, "largest first")
	require.Equal(t, int64(10), node.Status.Images[49].SizeBytes)
	require.Equal(t, []string{"d1", "d2", "t1", "t2", "t3"}, node.Status.Images[0].Names)
	require.Equal(t, int64(0), imgs[0].Size, "the caller's slice is not reordered")

	set, _ = Images(-1, func(context.Context) ([]Image, error) { return imgs, nil })
	require.NoError(t, set(context.Background(), time.Time{}, node))
	require.Len(t, node.Status.Images, 60)

	set, _ = Images(0, func(context.Context) ([]Image, error) { return nil, errors.New("runtime down") })
	require.ErrorContains(t, set(context.Background(), time.Time{}, node), "error getting image list: runtime down")
	require.Nil(t, node.Status.Images)
}

func TestPressureConditions(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	var evs []event
	pressure := false
	mem, err := MemoryPressureCondition(func() bool { return pressure }, recorder(&evs))
	require.NoError(t, err)
	_, err = DiskPressureCondition(nil, nil)
	require.ErrorIs(t, err, ErrInvalidConfig)
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	ctx := context.Background()

	require.NoError(t, mem(ctx, clk.Now(), node))
	c := node.Status.Conditions[0]
	require.Equal(t, v1.NodeCondition{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory",
		Message: "kubelet has sufficient memory available", LastHeartbeatTime: metav1.NewTime(clk.Now()), LastTransitionTime: metav1.NewTime(clk.Now())}, c)
	require.Equal(t, []event{{v1.EventTypeNormal, "NodeHasSufficientMemory", "Node n1 status is now: NodeHasSufficientMemory"}}, evs)

	// No flip: heartbeat moves, transition stays, no event.
	clk.Step(10 * time.Second)
	require.NoError(t, mem(ctx, clk.Now(), node))
	require.Equal(t, time.Unix(1010, 0), node.Status.Conditions[0].LastHeartbeatTime.Time)
	require.Equal(t, time.Unix(1000, 0), node.Status.Conditions[0].LastTransitionTime.Time)
	require.Len(t, evs, 1)

	// Flip whose report fails: the next computation starts again from the
	// server's copy (still False) and keeps the first transition time and
	// event.
	serverCopy := node.DeepCopy()
	pressure = true
	clk.Step(10 * time.Second)
	require.NoError(t, mem(ctx, clk.Now(), node))
	require.Equal(t, v1.ConditionTrue, node.Status.Conditions[0].Status)
	require.Equal(t, "KubeletHasInsufficientMemory", node.Status.Conditions[0].Reason)
	clk.Step(10 * time.Second)
	retry := serverCopy.DeepCopy()
	require.NoError(t, mem(ctx, clk.Now(), retry))
	require.Equal(t, time.Unix(1020, 0), retry.Status.Conditions[0].LastTransitionTime.Time)
	require.Equal(t, time.Unix(1030, 0), retry.Status.Conditions[0].LastHeartbeatTime.Time)
	require.Len(t, evs, 2)
	require.Equal(t, "NodeHasInsufficientMemory", evs[1].reason)

	for _, mk := range []func(clk2 *clocktesting.FakeClock, p func() bool) (Setter, error){
		func(c *clocktesting.FakeClock, p func() bool) (Setter, error) {
			return DiskPressureCondition(p, nil)
		},
		func(c *clocktesting.FakeClock, p func() bool) (Setter, error) { return PIDPressureCondition(p, nil) },
	} {
		s, err := mk(clk, func() bool { return true })
		require.NoError(t, err)
		n := &v1.Node{}
		require.NoError(t, s(ctx, clk.Now(), n))
		require.Equal(t, v1.ConditionTrue, n.Status.Conditions[0].Status)
	}
}

func TestReadyCondition(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	var evs []event
	var runtimeErr, netErr error
	ready, err := ReadyCondition(ReadyConfig{
		RuntimeErrors: func() error { return runtimeErr },
		NetworkErrors: func() error { return netErr },
		Recorder:      recorder(&evs)})
	require.NoError(t, err)
	ctx := context.Background()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	node.Status.Conditions = []v1.NodeCondition{{Type: "NetworkUnavailable", Status: v1.ConditionFalse}}

	require.NoError(t, ready(ctx, clk.Now(), node))
	c := node.Status.Conditions[1]
	require.Equal(t, v1.ConditionFalse, c.Status)
	require.Equal(t, "KubeletNotReady", c.Reason)
	require.Equal(t, "missing node capacity for resources: cpu, memory, pods, ephemeral-storage", c.Message)
	require.Empty(t, evs, "a new condition is not a flip")

	node.Status.Capacity = v1.ResourceList{v1.ResourceCPU: q("1"), v1.ResourceMemory: q("1Gi"), v1.ResourcePods: q("110"), v1.ResourceEphemeralStorage: q("1Gi")}
	runtimeErr, netErr = errors.New("container runtime is down"), errors.New("network plugin not ready")
	require.NoError(t, ready(ctx, clk.Now(), node))
	require.Equal(t, "[container runtime is down, network plugin not ready]", node.Status.Conditions[1].Message)

	runtimeErr, netErr = nil, nil
	clk.Step(time.Second)
	// An external writer appended a condition after Ready: Ready moves last.
	node.Status.Conditions = append(node.Status.Conditions, v1.NodeCondition{Type: "Custom", Status: v1.ConditionTrue})
	require.NoError(t, ready(ctx, clk.Now(), node))
	last := node.Status.Conditions[len(node.Status.Conditions)-1]
	require.Equal(t, v1.NodeReady, last.Type)
	require.Equal(t, v1.ConditionTrue, last.Status)
	require.Equal(t, "kubelet is posting ready status", last.Message)
	require.Equal(t, time.Unix(1001, 0), last.LastTransitionTime.Time)
	require.Equal(t, []event{{v1.EventTypeNormal, "NodeReady", "Node n1 status is now: NodeReady"}}, evs)
	require.Len(t, node.Status.Conditions, 3)

	runtimeErr = errors.New("PLEG is not healthy")
	require.NoError(t, ready(ctx, clk.Now(), node))
	require.Equal(t, "NodeNotReady", evs[1].reason)

	soft, _ := ReadyCondition(ReadyConfig{IgnoreEphemeralStorage: true, SoftRequirements: func() error { return errors.New("swap on") }})
	n := &v1.Node{}
	n.Status.Capacity = v1.ResourceList{v1.ResourceCPU: q("1"), v1.ResourceMemory: q("1Gi"), v1.ResourcePods: q("110")}
	require.NoError(t, soft(ctx, clk.Now(), n))
	require.Equal(t, "kubelet is posting ready status. WARNING: swap on", n.Status.Conditions[0].Message)
}

func TestApplyAndBuilder(t *testing.T) {
	var b Builder
	b.Add(GoRuntime(), nil)
	b.Add(Images(0, nil))
	b.Add(nil, nil)
	_, err := b.Setters()
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "Images")

	ran := 0
	setters := []Setter{
		func(context.Context, time.Time, *v1.Node) error { ran++; return errors.New("first broke") },
		func(context.Context, time.Time, *v1.Node) error { ran++; return nil },
		func(context.Context, time.Time, *v1.Node) error { ran++; return errors.New("third broke") },
	}
	err = Apply(context.Background(), time.Time{}, &v1.Node{}, setters)
	require.Equal(t, 3, ran, "a failing setter never stops the others")
	require.ErrorContains(t, err, "first broke")
	require.ErrorContains(t, err, "third broke")
}
