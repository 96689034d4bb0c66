package podsyncer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/podstatus"
	"github.com/nodekit/nodekit/podsyncer"
	"github.com/nodekit/nodekit/podsyncer/podnet"
	"github.com/nodekit/nodekit/podworkers"
)

// noVolumes is a volume manager for pods without volumes: it keeps each
// pod's directory (where the syncer writes its /etc/hosts) under root.
type noVolumes struct{ root string }

func (noVolumes) SetUpPod(context.Context, *v1.Pod) error      { return nil }
func (noVolumes) TearDownPod(context.Context, types.UID) error { return nil }
func (noVolumes) ContainerMounts(context.Context, *v1.Pod, *v1.Container, map[string]string) ([]*runtimeapi.Mount, error) {
	return nil, nil
}
func (v noVolumes) PodDir(uid types.UID) string { return filepath.Join(v.root, string(uid)) }

// A pod run to Running on a simulated CRI runtime reached over its gRPC
// socket with the kubelet's CRI client; the status goes to a podstatus
// manager (without an API client here, so it is only cached).
func Example() {
	dir, err := os.MkdirTemp("", "podsyncer-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

	sim := crisim.New(crisim.Config{Clock: clk, Images: []crisim.Image{{Ref: "nginx:1.27"}}})
	endpoint, stop, err := sim.ListenAndServe(filepath.Join(dir, "cri.sock"))
	if err != nil {
		panic(err)
	}
	defer stop()
	rt, err := remote.NewRemoteRuntimeService(ctx, endpoint, 10*time.Second, nil, false)
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)
	images, err := remote.NewRemoteImageService(ctx, endpoint, 10*time.Second, nil, false)
	if err != nil {
		panic(err)
	}
	defer images.Close(ctx)

	status, err := podstatus.New(podstatus.Config{Clock: clk})
	if err != nil {
		panic(err)
	}
	syncer, err := podsyncer.New(podsyncer.Config{
		Runtime: rt, Images: images, RuntimeName: "crisim", Status: status,
		Volumes:    noVolumes{root: filepath.Join(dir, "pods")},
		Network:    podnet.Config{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"},
		PodLogsDir: filepath.Join(dir, "logs"), MaskedPaths: []string{"/proc/kcore"}, Clock: clk,
	})
	if err != nil {
		panic(err)
	}

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "nginx", Image: "nginx:1.27"}}}}
	done, err := syncer.SyncPod(ctx, podworkers.UpdateCreate, pod, nil)
	fmt.Println("done:", done, "err:", err)

	st, _ := status.PodStatus(pod.UID)
	cs := st.ContainerStatuses[0]
	fmt.Println("phase:", st.Phase)
	fmt.Println(cs.Name, "running:", cs.State.Running != nil, "restarts:", cs.RestartCount,
		"runtime:", strings.SplitN(cs.ContainerID, "://", 2)[0])
	for _, c := range st.Conditions {
		if c.Type == v1.PodReadyToStartContainers || c.Type == v1.PodInitialized {
			fmt.Println(c.Type, c.Status)
		}
	}
	// Output:
	// done: false err: <nil>
	// phase: Running
	// nginx running: true restarts: 0 runtime: crisim
	// PodReadyToStartContainers True
	// Initialized True
}
