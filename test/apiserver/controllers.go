package apiserver

import (
	"context"
	"fmt"
	"os"
	"sync"

	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/certificates/rootcacertpublisher"
	"k8s.io/kubernetes/pkg/controller/serviceaccount"
)

// StartControllers runs the two kube-controller-manager controllers every
// pod on a node depends on, which the in-process control plane otherwise
// lacks: the root CA publisher (the kube-root-ca.crt ConfigMap in every
// namespace, read by each pod's kube-api-access projected volume) and the
// service account controller (the "default" ServiceAccount in every
// namespace). They are the upstream controllers, not imitations. The
// returned stop func ends them and waits for them; call it before Stop.
func (s *Server) StartControllers(ctx context.Context) (stop func(), err error) {
	ca, err := s.rootCA()
	if err != nil {
		return nil, err
	}
	cs := s.AdminClient()
	factory := informers.NewSharedInformerFactory(cs, 0)
	core := factory.Core().V1()
	logger := klog.FromContext(ctx)
	publisher, err := rootcacertpublisher.NewPublisher(core.ConfigMaps(), core.Namespaces(), cs, ca)
	if err != nil {
		return nil, fmt.Errorf("root CA publisher: %w", err)
	}
	accounts, err := serviceaccount.NewServiceAccountsController(logger, core.ServiceAccounts(), core.Namespaces(), cs,
		serviceaccount.DefaultServiceAccountsControllerOptions())
	if err != nil {
		return nil, fmt.Errorf("service account controller: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); publisher.Run(ctx, 1) }()
	go func() { defer wg.Done(); accounts.Run(ctx, 1) }()
	return func() {
		cancel()
		wg.Wait()
		factory.Shutdown()
	}, nil
}

// rootCA is the bundle pods trust for the API server: the CA the admin
// config verifies the apiserver with, or the harness's own CA when the
// config carries none.
func (s *Server) rootCA() ([]byte, error) {
	if len(s.admin.TLSClientConfig.CAData) > 0 {
		return s.admin.TLSClientConfig.CAData, nil
	}
	if f := s.admin.TLSClientConfig.CAFile; f != "" {
		return os.ReadFile(f)
	}
	return os.ReadFile(s.KubeletCAFile())
}
