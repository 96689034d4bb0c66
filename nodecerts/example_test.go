package nodecerts_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nodekit/nodekit/nodecerts"
)

// A node joins with a bootstrap token: NewClient writes the node's
// kubeconfig pointing at the certificate store, every API client is built
// from RESTConfig, and Run requests the certificate and rotates it. The
// agent waits for Ready before it registers the Node.
func ExampleNewClient() {
	dir, _ := os.MkdirTemp("", "nodecerts-example")
	defer os.RemoveAll(dir)
	boot := filepath.Join(dir, "bootstrap-kubelet.conf")
	_ = clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: "https://192.0.2.1:6443", InsecureSkipTLSVerify: true}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"tls-bootstrap-token-user": {Token: "abcdef.0123456789abcdef"}},
		Contexts:       map[string]*clientcmdapi.Context{"bootstrap": {Cluster: "c", AuthInfo: "tls-bootstrap-token-user"}},
		CurrentContext: "bootstrap",
	}, boot)

	creds, err := nodecerts.NewClient(nodecerts.ClientConfig{
		NodeName:            "edge-1",
		Kubeconfig:          filepath.Join(dir, "kubelet.conf"),
		BootstrapKubeconfig: boot,
		CertDir:             filepath.Join(dir, "pki"),
		Rotate:              true,
	})
	if err != nil {
		panic(err)
	}
	client, err := kubernetes.NewForConfig(creds.RESTConfig())
	if err != nil {
		panic(err)
	}
	_ = client // the node's clients: registration, leases, pods, events

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a real agent runs this for its life: go creds.Run(ctx), then <-creds.Ready()
	_ = creds.Run(ctx)

	written, _ := clientcmd.LoadFromFile(filepath.Join(dir, "kubelet.conf"))
	fmt.Println(filepath.Base(written.AuthInfos["default-auth"].ClientCertificate))
	// Output: kubelet-client-current.pem
}
