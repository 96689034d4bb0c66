package kubeclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/nodekit/nodekit/kubeclient"
	"github.com/nodekit/nodekit/lease"
)

// A client of the node-path resources only, handed to the blocks that take
// kubeclient interfaces (here lease, for the Node's UID).
func ExampleNewForConfig() {
	apiserver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&v1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "6f1c"}})
	}))
	defer apiserver.Close()

	client, err := kubeclient.NewForConfig(&rest.Config{Host: apiserver.URL, QPS: 20, Burst: 40})
	if err != nil {
		fmt.Println(err)
		return
	}
	uid, err := lease.NodeUIDFromAPI(client)(context.Background(), "node-1")
	fmt.Println(uid, err)
	// Output: 6f1c <nil>
}
