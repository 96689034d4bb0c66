package kubeletapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit/nodekit/kubeletapi"
	"github.com/nodekit/nodekit/kubeletapi/kubeletapitest"
)

// A host that serves the API itself (here through httptest) uses Handler.
// Run instead listens on Config.Addr with TLS and the plain healthz port.
func ExampleServer_Handler() {
	pods := kubeletapitest.NewPodLister(
		&v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "nginx"}}},
		},
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "dns"}},
	)
	logs := &kubeletapitest.LogSource{}
	logs.SetLines("default", "web", "nginx", kubeletapitest.Stdout("listening on :80")...)

	srv, err := kubeletapi.New(kubeletapi.Config{
		NodeName: "node-1",
		// Tests and demos only, served through Handler here (Run would
		// refuse anonymous AlwaysAllow on a network address): production
		// uses ClientCAFile, TokenReview and SubjectAccessReview.
		Addr: kubeletapi.Disabled,
		Auth: kubeletapi.AuthConfig{Anonymous: true, AlwaysAllow: true},
		Pods: pods,
		Logs: logs,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	resp, err := ts.Client().Get(ts.URL + "/pods")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var list v1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Status, list.Kind)
	for _, p := range list.Items {
		fmt.Println(p.Namespace + "/" + p.Name)
	}

	for _, path := range []string{"/containerLogs/default/web/nginx", "/containerLogs/default/nope/nginx"} {
		resp, err := ts.Client().Get(ts.URL + path)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Print(resp.Status, ": ", string(body))
	}
	// Output:
	// 200 OK PodList
	// default/web
	// kube-system/dns
	// 200 OK: listening on :80
	// 404 Not Found: pod "nope" does not exist
}
