package nodestatus

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeclient/clientset"
)

// benchSetters is a kubelet-sized setter list: 20 setters, 50 images.
func benchSetters(b *testing.B, clk *clocktesting.FakeClock) []Setter {
	var imgs []Image
	for i := range 50 {
		imgs = append(imgs, Image{Size: int64(1000 + i), RepoTags: []string{fmt.Sprintf("registry.example.com/team/app-%d:v1.2.3", i)},
			RepoDigests: []string{fmt.Sprintf("registry.example.com/team/app-%d@sha256:%064d", i, i)}})
	}
	var bl Builder
	bl.Add(NodeAddress(AddressConfig{Hostname: "n1", NodeIPs: []net.IP{net.ParseIP("10.0.0.1")}, ValidateIP: func(net.IP) error { return nil }}))
	bl.Add(MachineInfo(MachineConfig{
		Machine: func() (*cadvisorapi.MachineInfo, error) {
			return &cadvisorapi.MachineInfo{NumCores: 8, MemoryCapacity: 32 << 30, MachineID: "m", SystemUUID: "s", BootID: "b",
				HugePages: []cadvisorapi.HugePagesInfo{{PageSize: 2048}, {PageSize: 1 << 20}}}, nil
		},
		Capacity: func() v1.ResourceList { return v1.ResourceList{v1.ResourceEphemeralStorage: q("100Gi")} },
		Reserved: func(v1.ResourceList) v1.ResourceList {
			return v1.ResourceList{v1.ResourceCPU: q("100m"), v1.ResourceMemory: q("500Mi")}
		},
	}))
	bl.Add(VersionInfo(VersionConfig{Host: func() (string, string, error) { return "6.1.0", "Debian GNU/Linux 13", nil },
		Runtime: func(context.Context) (string, string, error) { return "containerd", "2.2.9", nil }}))
	bl.Add(DaemonEndpoints(10250))
	bl.Add(Images(0, func(context.Context) ([]Image, error) { return imgs, nil }))
	bl.Add(GoRuntime(), nil)
	bl.Add(RuntimeHandlers(func() []v1.NodeRuntimeHandler { return []v1.NodeRuntimeHandler{{Name: "runc"}} }))
	bl.Add(NodeFeatures(func() *v1.NodeFeatures { return nil }))
	no := func() bool { return false }
	bl.Add(MemoryPressureCondition(no, nil))
	bl.Add(DiskPressureCondition(no, nil))
	bl.Add(PIDPressureCondition(no, nil))
	bl.Add(VolumesInUse(func() bool { return true }, func() []v1.UniqueVolumeName { return nil }))
	for range 7 { // host-specific extras, e.g. annotations from plugins
		bl.Add(func(context.Context, time.Time, *v1.Node) error { return nil }, nil)
	}
	bl.Add(ReadyCondition(ReadyConfig{}))
	s, err := bl.Setters()
	if err != nil || len(s) != 20 {
		b.Fatal(len(s), err)
	}
	return s
}

// BenchmarkStatusComputation is one steady-state pass: run 20 setters on a
// copy of the Node and decide that nothing but heartbeats changed.
func BenchmarkStatusComputation(b *testing.B) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	ctl, err := New(Config{Client: clientset.Wrap(fake.NewClientset()), NodeName: "n1", Setters: benchSetters(b, clk), Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := ctl.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		clk.Step(10 * time.Second)
		res, err := ctl.Sync(ctx)
		if err != nil || res.Patched {
			b.Fatal(res, err)
		}
		if clk.Now().Sub(time.Unix(1000, 0)) > 2*time.Minute {
			clk.SetTime(time.Unix(1000, 0)) // stay inside the report period
		}
	}
}

// BenchmarkStatusPatch is the cost of building the patch for a flip of
// the Ready condition, and for a periodic report (heartbeats only).
func BenchmarkStatusPatch(b *testing.B) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	node := &v1.Node{}
	node.Name = "n1"
	if err := Apply(context.Background(), clk.Now(), node, benchSetters(b, clk)); err != nil {
		b.Fatal(err)
	}
	flipped := node.DeepCopy()
	flipped.Status.Conditions[len(flipped.Status.Conditions)-1].Status = v1.ConditionFalse
	reported := node.DeepCopy()
	for i := range reported.Status.Conditions {
		reported.Status.Conditions[i].LastHeartbeatTime.Time = clk.Now().Add(5 * time.Minute)
	}
	for name, n := range map[string]*v1.Node{"flip": flipped, "heartbeat": reported} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := StatusPatch(node, n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
