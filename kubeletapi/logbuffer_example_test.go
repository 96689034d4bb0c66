package kubeletapi_test

import (
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/kubeletapi/kubeletapitest"
)

// A provider whose containers run in process keeps their output in a
// LogBuffer and serves it as the server's log source (Config.Logs). The
// clock is fixed here so that the timestamps are stable.
func ExampleLogBuffer() {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	logs, err := kubeletapi.NewLogBuffer(kubeletapi.LogBufferConfig{Clock: clk})
	if err != nil {
		fmt.Println(err)
		return
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "worker", UID: "uid-1"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "main"}}},
	}

	// The provider starts the container and hands it the writers, e.g. as
	// a log.Logger's output (one Write per line).
	stdout, stderr := logs.Start(pod.UID, "main")
	fmt.Fprintln(stdout, "starting")
	log.New(stderr, "", 0).Print("crashed")
	// It restarts: the first run becomes the previous instance.
	stdout, _ = logs.Start(pod.UID, "main")
	fmt.Fprintln(stdout, "starting again")
	fmt.Fprintln(stdout, "ready")

	srv, err := kubeletapi.New(kubeletapi.Config{
		NodeName: "node-1",
		// Tests and demos only, served through Handler here: production
		// uses ClientCAFile, TokenReview and SubjectAccessReview.
		Addr: kubeletapi.Disabled,
		Auth: kubeletapi.AuthConfig{Anonymous: true, AlwaysAllow: true},
		Pods: kubeletapitest.NewPodLister(pod),
		Logs: logs,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	for _, query := range []string{"tailLines=1", "previous=true&timestamps=true", "previous=true&stream=Stderr"} {
		resp, err := ts.Client().Get(ts.URL + "/containerLogs/default/worker/main?" + query)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s:\n%s", query, body)
	}
	// The container exits; the pod is deleted later.
	logs.Close(pod.UID, "main")
	logs.Remove(pod.UID)
	// Output:
	// tailLines=1:
	// ready
	// previous=true&timestamps=true:
	// 2026-01-02T03:04:05.000000000Z starting
	// 2026-01-02T03:04:05.000000000Z crashed
	// previous=true&stream=Stderr:
	// crashed
}
