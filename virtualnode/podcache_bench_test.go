package virtualnode

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/kubeclient/clientset"
	"github.com/nodekit/nodekit/virtualnode/simulated"
)

// benchPod is a Running one-container pod as the API server returns it
// (defaults filled in), the shape of make bench-cluster's virtual pods.
func benchPod() *v1.Pod {
	at := metav1.NewTime(t0)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p-00042", Namespace: "bench-virtualnodes", UID: "0b9d3f3e-6a43-4f57-9d2b-7d1c3f2f9a11",
			ResourceVersion: "123456", CreationTimestamp: at},
		Spec: v1.PodSpec{NodeName: "vn-0", RestartPolicy: v1.RestartPolicyAlways, DNSPolicy: v1.DNSClusterFirst,
			TerminationGracePeriodSeconds: ptr.To[int64](30), ServiceAccountName: "default", DeprecatedServiceAccount: "default",
			AutomountServiceAccountToken: ptr.To(false), SecurityContext: &v1.PodSecurityContext{}, SchedulerName: "default-scheduler",
			Tolerations: []v1.Toleration{{Operator: v1.TolerationOpExists}}, Priority: ptr.To[int32](0), EnableServiceLinks: ptr.To(true),
			PreemptionPolicy: ptr.To(v1.PreemptLowerPriority),
			Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", TerminationMessagePath: "/dev/termination-log",
				TerminationMessagePolicy: v1.TerminationMessageReadFile, ImagePullPolicy: v1.PullIfNotPresent}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, QOSClass: v1.PodQOSBestEffort, StartTime: &at, PodIP: "10.64.0.43",
			PodIPs: []v1.PodIP{{IP: "10.64.0.43"}}, HostIP: "172.16.0.1", HostIPs: []v1.HostIP{{IP: "172.16.0.1"}},
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: at},
				{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: at},
				{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: at},
				{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: at}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "app", Image: "registry.k8s.io/pause:3.10", Ready: true,
				ImageID: "virtual://registry.k8s.io/pause:3.10", ContainerID: "virtual://0b9d3f3e/app", Started: ptr.To(true),
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: at}}}}},
	}
}

// benchPodN is the i-th of many benchPods on nodes nodes: its own name,
// UID, node, times (a second apart), addresses and container ID.
func benchPodN(i, nodes int) *v1.Pod {
	p := benchPod()
	p.Name = fmt.Sprintf("p-%05d", i)
	p.UID = types.UID(fmt.Sprintf("%08x-6a43-4f57-9d2b-%012d", 0x0b9d3f3e+i*7919, i))
	p.ResourceVersion = strconv.Itoa(100000 + i)
	p.Spec.NodeName = fmt.Sprintf("vn-%d", i%nodes)
	at := metav1.NewTime(t0.Add(time.Duration(i) * time.Second))
	p.CreationTimestamp, p.Status.StartTime = at, &at
	for j := range p.Status.Conditions {
		p.Status.Conditions[j].LastTransitionTime = at
	}
	ip := fmt.Sprintf("10.64.%d.%d", i/250, i%250+2)
	p.Status.PodIP, p.Status.PodIPs = ip, []v1.PodIP{{IP: ip}}
	host := fmt.Sprintf("172.16.%d.%d", (i%nodes)/250, (i%nodes)%250+1)
	p.Status.HostIP, p.Status.HostIPs = host, []v1.HostIP{{IP: host}}
	p.Status.ContainerStatuses[0].ContainerID = "virtual://" + string(p.UID)[:8] + "/app"
	p.Status.ContainerStatuses[0].State.Running.StartedAt = at
	return p
}

// BenchmarkPodCacheTransform is what a watch event of a managed pod costs
// the cache: the entry with the pod and its status encoded.
func BenchmarkPodCacheTransform(b *testing.B) {
	c := newPodCache(Config{Client: clientset.Wrap(fake.NewClientset()), TrimPodStatus: true}, func(string) bool { return true })
	if _, err := c.transform(benchPodN(0, 1)); err != nil { // the cache's reference
		b.Fatal(err)
	}
	p := benchPodN(4321, 1000)
	b.ReportAllocs()
	var size int
	for b.Loop() {
		e, err := c.transform(p)
		if err != nil {
			b.Fatal(err)
		}
		size = len(e.enc())
	}
	b.ReportMetric(float64(size), "pod-bytes")
}

// BenchmarkPodEntryDecode is what each sync, event delivery and lookup of
// a pod at rest costs: decoding its entry.
func BenchmarkPodEntryDecode(b *testing.B) {
	c := newPodCache(Config{Client: clientset.Wrap(fake.NewClientset()), TrimPodStatus: true}, func(string) bool { return true })
	if _, err := c.transform(benchPodN(0, 1)); err != nil {
		b.Fatal(err)
	}
	e, err := c.transform(benchPodN(4321, 1000))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if c.decode(e) == nil {
			b.Fatal("no pod")
		}
	}
}

// BenchmarkStatusSum is what "report or not" costs each sync of a pod at
// rest: the digest of the provider's status.
func BenchmarkStatusSum(b *testing.B) {
	c := newPodCache(Config{Client: clientset.Wrap(fake.NewClientset())}, func(string) bool { return true })
	st := &benchPod().Status
	b.ReportAllocs()
	for b.Loop() {
		if _, err := statusSum(c.seed, st); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOwnedStatusPatch is what building a status patch costs (each
// status change of a pod), here the first of a Running pod whose API copy
// has only a phase, a QoS class and the scheduler's condition.
func BenchmarkOwnedStatusPatch(b *testing.B) {
	p := benchPod()
	found := trimStatus(&p.Status)
	b.ReportAllocs()
	var size int
	for b.Loop() {
		patch, err := ownedStatusPatch(p.UID, &found, &p.Status, statusShape(1<<2|1<<3|1<<4))
		if err != nil {
			b.Fatal(err)
		}
		size = len(patch)
	}
	b.ReportMetric(float64(size), "patch-bytes")
}

// BenchmarkPodCacheMemory10k measures the heap the pod cache holds per pod
// at rest: 10,000 pods of make bench-cluster's shape on 1,000 nodes, in
// the cache's records, each seen first as created (Pending), then
// running.
func BenchmarkPodCacheMemory10k(b *testing.B) {
	const n, nodes = 10000, 1000
	var perPod float64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c := newPodCache(Config{Client: clientset.Wrap(fake.NewClientset()), TrimPodStatus: true}, func(string) bool { return true })
		for i := range n {
			created := benchPodN(i, nodes)
			created.ResourceVersion = strconv.Itoa(i)
			created.Status = v1.PodStatus{Phase: v1.PodPending, QOSClass: v1.PodQOSBestEffort}
			if err := c.Add(created); err != nil {
				b.Fatal(err)
			}
		}
		for i := range n {
			if err := c.Add(benchPodN(i, nodes)); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perPod = float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(c)
	}
	b.ReportMetric(perPod, "B/pod")
}

// BenchmarkNodeStatusSync is a virtual node's status pass in the steady
// state (every StatusUpdateFrequency, a thousand times a period at 1,000
// nodes): decode the last-known Node, run the setters, find nothing but
// heartbeats changed, send nothing.
func BenchmarkNodeStatusSync(b *testing.B) {
	clk := clocktesting.NewFakeClock(t0)
	sim, err := simulated.New(simulated.Config{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	a, err := New(Config{Client: clientset.Wrap(fake.NewClientset()), Nodes: []string{"vn-0"}, Provider: sim, Clock: clk, CPU: 4})
	if err != nil {
		b.Fatal(err)
	}
	ctl := a.nodes[0].ctl
	ctx := context.Background()
	if _, err := ctl.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		clk.Step(10 * time.Second)
		if res, err := ctl.Sync(ctx); err != nil || res.Patched {
			b.Fatal(res, err)
		}
		if clk.Since(t0) > 2*time.Minute {
			clk.SetTime(t0) // stay inside the report period
		}
	}
}
