// Command apiserver runs the test harness's etcd + kube-apiserver as a
// separate process and writes an admin kubeconfig, so a node agent can be
// measured alone (its own CPU and RSS). With --pods it also creates that many
// pods spread over --nodes nodes named --node-prefix<i> once those nodes
// exist. It runs until SIGINT/SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nodekit/nodekit/test/apiserver"
)

func main() {
	out := flag.String("kubeconfig", "/tmp/nodekit-apiserver.kubeconfig", "where to write the admin kubeconfig")
	pods := flag.Int("pods", 0, "pods to create once the nodes exist")
	nodes := flag.Int("nodes", 0, "nodes the pods are spread over")
	prefix := flag.String("node-prefix", "vnode-", "node name prefix")
	flag.Parse()
	if err := run(*out, *pods, *nodes, *prefix); err != nil {
		fmt.Fprintln(os.Stderr, "apiserver:", err)
		os.Exit(1)
	}
}

func run(out string, pods, nodes int, prefix string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := apiserver.Start()
	if err != nil {
		return err
	}
	defer srv.Stop()
	cfg := srv.AdminConfig()
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["harness"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, TLSServerName: cfg.ServerName, InsecureSkipTLSVerify: cfg.Insecure}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["harness"] = &clientcmdapi.Context{Cluster: "harness", AuthInfo: "admin"}
	kc.CurrentContext = "harness"
	if err := clientcmd.WriteToFile(*kc, out); err != nil {
		return err
	}
	fmt.Println("kube-apiserver ready; kubeconfig", out)
	fast := srv.AdminConfig()
	fast.QPS, fast.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(fast)
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if pods > 0 && nodes > 0 {
		if err := createPods(ctx, cs, pods, nodes, prefix); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

func createPods(ctx context.Context, cs kubernetes.Interface, pods, nodes int, prefix string) error {
	last := fmt.Sprintf("%s%d", prefix, nodes-1)
	for {
		if _, err := cs.CoreV1().Nodes().Get(ctx, last, metav1.GetOptions{}); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < pods; i += 8 {
				p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-%d", i)}, Spec: v1.PodSpec{
					NodeName: fmt.Sprintf("%s%d", prefix, i%nodes), Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
				if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Printf("created %d pods in %s\n", pods, time.Since(start).Round(time.Millisecond))
	return nil
}
