package virtualnode

import (
	"bytes"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodekit/nodekit/kubeclient/clientset"
)

func TestRefCoderCodesPodsOfOneShapeSmall(t *testing.T) {
	ref, err := benchPod().Marshal()
	require.NoError(t, err)
	c := newRefCoder(ref)

	other := benchPod()
	other.Name, other.UID = "p-07311", "5a1e0c7d-1b2f-4c3d-8e9f-0a1b2c3d4e5f"
	at := metav1.NewTime(t0.Add(17 * time.Minute))
	other.CreationTimestamp, other.Status.StartTime = at, &at
	other.Status.PodIP, other.Status.PodIPs[0].IP = "10.64.3.201", "10.64.3.201"
	other.Status.ContainerStatuses[0].ContainerID = "virtual://5a1e0c7d/app"
	src, err := other.Marshal()
	require.NoError(t, err)

	ops := c.encode(nil, src)
	require.Less(t, len(ops), len(src)/3, "a pod of the reference's shape codes to under a third of its %d bytes", len(src))
	got, err := c.decode(nil, string(ops))
	require.NoError(t, err)
	require.Equal(t, src, got)

	self := c.encode(nil, ref)
	require.LessOrEqual(t, len(self), 4, "the reference itself is one copy")
}

func TestRefCoderRoundTrips(t *testing.T) {
	c := newRefCoder([]byte("the quick brown fox jumps over the lazy dog"))
	for _, src := range [][]byte{
		nil,
		[]byte("abc"),
		[]byte("the quick brown fox"),
		[]byte("a lazy dog jumps over the quick brown fox, twice: the quick brown fox"),
		bytes.Repeat([]byte{0xff, 0x00, 0x80}, 200), // nothing in common, long literal
	} {
		ops := c.encode([]byte("prefix"), src)
		require.Equal(t, "prefix", string(ops[:6]), "encode appends")
		got, err := c.decode([]byte("kept"), string(ops[6:]))
		require.NoError(t, err)
		require.Equal(t, "kept"+string(src), string(got), "decode appends")
		if !raceEnabled {
			coded := string(ops[6:])
			require.LessOrEqual(t, testing.AllocsPerRun(10, func() { _, _ = c.decode(nil, coded) }), 1.0,
				"decode allocates its output once")
		}
	}
}

func TestRefCoderRefusesCorruptOps(t *testing.T) {
	c := newRefCoder([]byte("0123456789"))
	for name, ops := range map[string]string{
		"truncated varint":        "\x80",
		"literal past the end":    "\x0aabc",              // 5 literal bytes, 3 there
		"copy past the reference": "\x09\x08",             // 4 bytes at 8
		"copy offset missing":     "\x09",                 // a copy without its offset
		"copy offset overflow":    "\x09\xff\xff\xff\x0f", // offset far beyond
	} {
		_, err := c.decode(nil, ops)
		require.ErrorIs(t, err, errBadRefCode, name)
	}
}

func FuzzRefCoder(f *testing.F) {
	ref, err := benchPod().Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ref)
	f.Add([]byte("x"))
	c := newRefCoder(ref)
	f.Fuzz(func(t *testing.T, src []byte) {
		got, err := c.decode(nil, string(c.encode(nil, src)))
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("round trip of %q: %q, %v", src, got, err)
		}
		_, _ = c.decode(nil, string(src)) // any input: an error, never a panic
	})
}

func TestPodCacheDecodesPodsCodedAgainstTheFirstOfTheirPhase(t *testing.T) {
	c := newPodCache(Config{Client: clientset.Wrap(fake.NewClientset())}, func(string) bool { return true })
	different := benchPodN(7, 3)
	different.Labels = map[string]string{"app": "web", "tier": "front"}
	different.Spec.Containers = append(different.Spec.Containers, v1.Container{Name: "sidecar", Image: "example.com/proxy:v2",
		Args: []string{"--listen", ":8080"}})
	different.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pending := benchPodN(4, 3)
	pending.Status = v1.PodStatus{Phase: v1.PodPending, QOSClass: v1.PodQOSBestEffort}
	succeeded := benchPodN(5, 3)
	succeeded.Status.Phase = v1.PodSucceeded
	pods := []*v1.Pod{benchPodN(0, 3), benchPodN(1, 3), pending, different, succeeded, benchPodN(2, 3)}
	var running *refCoder
	for i, p := range pods {
		e := putPod(t, c, p)
		if i == 0 {
			running = c.coders[phaseSlot(v1.PodRunning)].Load()
		}
		want, err := p.Marshal()
		require.NoError(t, err)
		got, err := c.decode(e).Marshal()
		require.NoError(t, err)
		require.Equal(t, want, got, "pod %s decodes to itself", p.Name)
	}
	require.Same(t, running, c.coders[phaseSlot(v1.PodRunning)].Load(), "one reference for running pods, the first one's")
	for _, phase := range []v1.PodPhase{v1.PodPending, v1.PodSucceeded} {
		require.NotNil(t, c.coders[phaseSlot(phase)].Load(), "a reference of its own for %s pods", phase)
		require.NotSame(t, running, c.coders[phaseSlot(phase)].Load())
	}
	require.Nil(t, c.coders[phaseSlot(v1.PodFailed)].Load(), "no reference before a pod in that phase")
}

func TestPodCacheEntriesOfAPodShareItsNameAndUID(t *testing.T) {
	c := newPodCache(Config{Client: clientset.Wrap(fake.NewClientset())}, func(string) bool { return true })
	first := putPod(t, c, benchPodN(3, 2))
	update := benchPodN(3, 2) // the same pod decoded afresh from a later event
	update.ResourceVersion = "999999"
	update.Status.Phase = v1.PodSucceeded
	later := putPod(t, c, update)
	require.Same(t, unsafe.StringData(first.name), unsafe.StringData(later.name))
	require.Same(t, unsafe.StringData(string(first.uid)), unsafe.StringData(string(later.uid)))
	require.Equal(t, "999999", later.resourceVersion())
	got := c.decode(later)
	require.Equal(t, update.ResourceVersion, got.ResourceVersion)
	require.Equal(t, v1.PodSucceeded, got.Status.Phase)
	require.Same(t, unsafe.StringData(first.name), unsafe.StringData(got.Name), "a decoded pod shares them too")
	c.reported(update.UID, statusMark{sum: 1})
	require.Len(t, c.pods, 1)
	for uid := range c.pods { // a map assignment replaces the key with the one given
		require.Same(t, unsafe.StringData(string(first.uid)), unsafe.StringData(string(uid)), "the cache's record is keyed by the shared copy")
	}
}

func TestNodeCodecCodesNodesAgainstTheFirst(t *testing.T) {
	node := func(i int) []byte {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("vn-%d", i), UID: types.UID(fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)),
			ResourceVersion: fmt.Sprint(1000 + i), Labels: map[string]string{"type": "virtual-kubelet", "kubernetes.io/hostname": fmt.Sprintf("vn-%d", i)}},
			Status: v1.NodeStatus{
				Capacity:  v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("32Gi"), v1.ResourcePods: resource.MustParse("110")},
				Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: fmt.Sprintf("172.16.0.%d", i)}, {Type: v1.NodeHostName, Address: fmt.Sprintf("vn-%d", i)}},
				Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status",
					LastHeartbeatTime: metav1.NewTime(t0.Add(time.Duration(i) * time.Second)), LastTransitionTime: metav1.NewTime(t0)}},
				NodeInfo: v1.NodeSystemInfo{KubeletVersion: "v1.36.3", ContainerRuntimeVersion: "virtual://nodekit", OperatingSystem: "linux", Architecture: "amd64"}}}
		raw, err := n.Marshal()
		require.NoError(t, err)
		return raw
	}
	var c nodeCodec
	_, err := c.Decode(nil, []byte{1})
	require.Error(t, err, "nothing to decode against yet")
	for i := range 3 {
		raw := node(i)
		kept, err := c.Encode(raw)
		require.NoError(t, err)
		got, err := c.Decode(nil, kept)
		require.NoError(t, err)
		require.Equal(t, raw, got)
		if i > 0 {
			require.Less(t, len(kept), len(raw)/3, "node %d is coded against the first: %d of %d bytes", i, len(kept), len(raw))
		}
	}
	_, err = c.Decode(nil, []byte{0xff, 0xff, 0xff})
	require.Error(t, err)
}
