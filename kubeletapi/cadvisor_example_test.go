package kubeletapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/kubeletapi/kubeletapitest"
)

// /metrics/cadvisor serves the SummaryProvider's figures in cadvisor's
// families, for Prometheus' kubelet job. Under the systemd cgroup driver a
// host names the cgroups as its runtime does (cgroups.Manager.PodCgroup
// fits PodCgroup).
func ExampleCadvisorConfig() {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "1-2"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "nginx", Image: "nginx"}}},
		Status: v1.PodStatus{QOSClass: v1.PodQOSBestEffort, ContainerStatuses: []v1.ContainerStatus{
			{Name: "nginx", ContainerID: "containerd://abc", Image: "docker.io/library/nginx:latest"}}},
	}
	ws := uint64(10 << 20)
	now := metav1.NewTime(time.Unix(1700000000, 0))
	summary := &statsapi.Summary{Pods: []statsapi.PodStats{{
		PodRef: statsapi.PodReference{Namespace: "default", Name: "web", UID: "1-2"},
		Containers: []statsapi.ContainerStats{{Name: "nginx",
			Memory: &statsapi.MemoryStats{Time: now, WorkingSetBytes: &ws}}},
	}}}
	srv, err := kubeletapi.New(kubeletapi.Config{
		NodeName: "node-1",
		Addr:     kubeletapi.Disabled,
		Auth:     kubeletapi.AuthConfig{Anonymous: true, AlwaysAllow: true}, // tests and demos only
		Pods:     kubeletapitest.NewPodLister(pod),
		Summary: kubeletapi.SummaryProviderFunc(func(context.Context) (*statsapi.Summary, error) {
			return summary, nil
		}),
		Cadvisor: kubeletapi.CadvisorConfig{
			PodCgroup: func(pod *v1.Pod) string {
				qos := strings.ToLower(string(pod.Status.QOSClass))
				return "/kubepods.slice/kubepods-" + qos + ".slice/kubepods-" + qos + "-pod" +
					strings.ReplaceAll(string(pod.UID), "-", "_") + ".slice"
			},
			ContainerCgroup: kubeletapi.RuntimeContainerCgroup("containerd", "systemd"),
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	resp, err := ts.Client().Get(ts.URL + "/metrics/cadvisor")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "container_memory_working_set_bytes{") {
			fmt.Print(line)
		}
	}
	// Output:
	// container_memory_working_set_bytes{container="nginx",id="/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1_2.slice/cri-containerd-abc.scope",image="docker.io/library/nginx:latest",name="abc",namespace="default",pod="web"} 1.048576e+07 1700000000000
}
