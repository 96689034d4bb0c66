package prober_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodekit/nodekit/prober"
)

// A host probes the containers of a pod: it adds the pod, feeds its status
// whenever it computes one, runs the manager and routes result updates to
// its sync loop.
func Example() {
	// The "container": an HTTP server on loopback.
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer app.Close()
	_, p, _ := net.SplitHostPort(app.Listener.Addr().String())
	port, _ := strconv.Atoi(p)

	m, err := prober.New(prober.Config{
		Rand: func() float64 { return 0 }, // first probes at once, for the example
		// Runner: a cri-client RuntimeService, for exec probes.
		// Recorder: an EventRecorder, for "Unhealthy" events.
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name:           "app",
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(int32(port))}}},
			LivenessProbe:  &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}},
		}}},
	}
	if err := m.AddPod(pod); err != nil {
		panic(err)
	}
	status := func() *v1.PodStatus { // what the runtime reports
		return &v1.PodStatus{Phase: v1.PodRunning, PodIP: "127.0.0.1", ContainerStatuses: []v1.ContainerStatus{{
			Name: "app", ContainerID: "containerd://0123",
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Now()}},
		}}}
	}
	// The first status before Run, so the first probes see the container
	// (a probe that finds no status waits a period, as upstream's).
	st := status()
	m.UpdatePodStatus(ctx, pod, st)
	fmt.Println("started:", *st.ContainerStatuses[0].Started, "ready:", st.ContainerStatuses[0].Ready)
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()

	// The sync loop: wait for the container to become ready.
	for u := range m.Updates(prober.Readiness) {
		if u.Result == prober.Success {
			fmt.Println("readiness of", u.ContainerID.String()+":", u.Result)
			break
		}
	}
	st = status()
	m.UpdatePodStatus(ctx, pod, st)
	fmt.Println("started:", *st.ContainerStatuses[0].Started, "ready:", st.ContainerStatuses[0].Ready)

	select {
	case u := <-m.Updates(prober.Liveness):
		fmt.Println("liveness of", u.ContainerID.String()+":", u.Result)
	case <-time.After(5 * time.Second):
		fmt.Println("no liveness result")
	}
	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// started: true ready: false
	// readiness of containerd://0123: Success
	// started: true ready: true
	// liveness of containerd://0123: Success
	// Run: <nil>
}
