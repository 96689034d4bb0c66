package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	nodeutil "k8s.io/component-helpers/node/util"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/nodestatus"
)

// realisticSetters is a kubelet-like status: machine, version, 50 images,
// pressure conditions (memory flips when flap is true) and Ready.
func realisticSetters(b *testing.B, clk *clocktesting.FakeClock, pressure func() bool) []nodestatus.Setter {
	var imgs []nodestatus.Image
	for i := range 50 {
		imgs = append(imgs, nodestatus.Image{Size: int64(100<<20 + i), RepoTags: []string{fmt.Sprintf("registry.example.com/team/app-%d:v1.2.3", i)},
			RepoDigests: []string{fmt.Sprintf("registry.example.com/team/app-%d@sha256:%064d", i, i)}})
	}
	var bl nodestatus.Builder
	bl.Add(nodestatus.MachineInfo(nodestatus.MachineConfig{
		Machine: func() (*cadvisorapi.MachineInfo, error) {
			return &cadvisorapi.MachineInfo{NumCores: 8, MemoryCapacity: 32 << 30, MachineID: "m", SystemUUID: "s", BootID: "b"}, nil
		},
		Capacity: func() v1.ResourceList {
			return v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
		},
	}))
	bl.Add(nodestatus.VersionInfo(nodestatus.VersionConfig{Host: func() (string, string, error) { return "6.1.0", "Debian GNU/Linux 13", nil },
		Runtime: func(context.Context) (string, string, error) { return "containerd", "2.2.9", nil }}))
	bl.Add(nodestatus.DaemonEndpoints(10250))
	bl.Add(nodestatus.Images(0, func(context.Context) ([]nodestatus.Image, error) { return imgs, nil }))
	bl.Add(nodestatus.GoRuntime(), nil)
	no := func() bool { return false }
	bl.Add(nodestatus.MemoryPressureCondition(pressure, nil))
	bl.Add(nodestatus.DiskPressureCondition(no, nil))
	bl.Add(nodestatus.PIDPressureCondition(no, nil))
	bl.Add(nodestatus.ReadyCondition(nodestatus.ReadyConfig{}))
	s, err := bl.Setters()
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// reporter is one node-status implementation, stepped every 10s.
type reporter interface {
	tick(ctx context.Context) error
}

// nodekitReporter is nodestatus.Controller.Sync.
type nodekitReporter struct{ ctl *nodestatus.Controller }

func (r nodekitReporter) tick(ctx context.Context) error { _, err := r.ctl.Sync(ctx); return err }

// upstreamReporter models kubelet v1.36: a Node informer (field-selected
// watch) as the lister; every 10s compute on a copy of the lister's node,
// patch with component-helpers' PatchNodeStatus if changed or 5m passed.
type upstreamReporter struct {
	cs         kubernetes.Interface
	name       string
	clk        *clocktesting.FakeClock
	setters    []nodestatus.Setter
	get        func() (*v1.Node, error)
	lastReport time.Time
	lastRV     string
}

func (u *upstreamReporter) tick(ctx context.Context) error {
	// Wait for the informer to have seen our last write (compressed time).
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := u.get()
		if err == nil && (u.lastRV == "" || n.ResourceVersion >= u.lastRV) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("informer lag: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	orig, err := u.get()
	if err != nil {
		return err
	}
	node := orig.DeepCopy()
	_ = nodestatus.Apply(ctx, u.clk.Now(), node, u.setters)
	if !nodestatus.StatusChanged(&orig.Status, &node.Status) && u.clk.Since(u.lastReport) < 5*time.Minute {
		return nil
	}
	updated, _, err := nodeutil.PatchNodeStatus(u.cs.CoreV1(), types.NodeName(u.name), orig, node)
	if err != nil {
		return err
	}
	u.lastReport, u.lastRV = u.clk.Now(), updated.ResourceVersion
	return nil
}

// vkReporter models virtual-kubelet v1.11's NodeController with leases:
// every statusInterval (1m) GET the node and send a three-way status patch
// that refreshes every heartbeat and stores the last applied status and
// metadata in two annotations.
type vkReporter struct {
	cs      kubernetes.Interface
	name    string
	clk     *clocktesting.FakeClock
	setters []nodestatus.Setter
	ticks   int
}

func (v *vkReporter) tick(ctx context.Context) error {
	v.ticks++
	if v.ticks%6 != 1 { // every minute
		return nil
	}
	server, err := v.cs.CoreV1().Nodes().Get(ctx, v.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	want := server.DeepCopy()
	_ = nodestatus.Apply(ctx, v.clk.Now(), want, v.setters)
	st, _ := json.Marshal(want.Status)
	meta, _ := json.Marshal(metav1.ObjectMeta{Name: want.Name, Labels: want.Labels})
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	want.Annotations["virtual-kubelet.io/last-applied-object-meta"] = string(meta)
	want.Annotations["virtual-kubelet.io/last-applied-node-status"] = string(st)
	oldJSON, _ := json.Marshal(server)
	newJSON, _ := json.Marshal(want)
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Node{})
	if err != nil {
		return err
	}
	_, err = v.cs.CoreV1().Nodes().Patch(ctx, v.name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// BenchmarkNodeStatusNodeHour runs one simulated node-hour (360 ticks of
// 10s on a fake clock) per op against the real apiserver as the node
// identity, steady and with MemoryPressure flapping every 2 minutes, and
// reports requests and bytes (request + response bodies, watch included)
// per node-hour.
func BenchmarkNodeStatusNodeHour(b *testing.B) {
	ctx := context.Background()
	for _, flap := range []bool{false, true} {
		for _, impl := range []string{"nodekit", "upstream", "virtual-kubelet"} {
			b.Run(fmt.Sprintf("%s/flap=%v", impl, flap), func(b *testing.B) {
				var reqs, bytes int64
				for i := 0; b.Loop(); i++ {
					name := fmt.Sprintf("nsb-%s-%v-%d-%d", impl, flap, b.N, i)
					cs, m := meteredNodeClient(b, name)
					clk := clocktesting.NewFakeClock(time.Now())
					pressure := func() bool { return flap && (clk.Now().Unix()/120)%2 == 1 }
					setters := realisticSetters(b, clk, pressure)
					// Registration is the same for all: nodekit's create.
					ctl, err := nodestatus.New(nodestatus.Config{Client: clientset.Wrap(cs), NodeName: name, Setters: setters, Clock: clk})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := ctl.Sync(ctx); err != nil {
						b.Fatal(err)
					}
					var r reporter = nodekitReporter{ctl}
					var stop func()
					switch impl {
					case "upstream":
						f := informers.NewSharedInformerFactoryWithOptions(cs, 0,
							informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name }))
						lister := f.Core().V1().Nodes().Lister()
						sctx, cancel := context.WithCancel(ctx)
						f.Start(sctx.Done())
						f.WaitForCacheSync(sctx.Done())
						stop = func() { cancel(); f.Shutdown() }
						r = &upstreamReporter{cs: cs, name: name, clk: clk, setters: setters, get: func() (*v1.Node, error) { return lister.Get(name) }}
					case "virtual-kubelet":
						r = &vkReporter{cs: cs, name: name, clk: clk, setters: setters}
					}
					r0, b0 := m.requests.Load(), m.bytes.Load()
					for range 360 {
						clk.Step(10 * time.Second)
						if err := r.tick(ctx); err != nil {
							b.Fatal(err)
						}
					}
					time.Sleep(50 * time.Millisecond) // let the last watch event arrive
					reqs += m.requests.Load() - r0
					bytes += m.bytes.Load() - b0
					if stop != nil {
						stop()
					}
				}
				b.ReportMetric(float64(reqs)/float64(b.N), "req/node-hour")
				b.ReportMetric(float64(bytes)/float64(b.N)/1024, "KiB/node-hour")
			})
		}
	}
}
