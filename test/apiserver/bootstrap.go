package apiserver

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// BootstrapKubeconfig creates a bootstrap token (a Secret in kube-system,
// as kubeadm token create does) whose group system:bootstrappers may
// request node client certificates (ClusterRole system:node-bootstrapper),
// and writes a kubeconfig that authenticates with it to path. The
// apiserver runs with --enable-bootstrap-token-auth.
func (s *Server) BootstrapKubeconfig(ctx context.Context, path, tokenID string) error {
	secret := make([]byte, 8)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	tokenSecret := fmt.Sprintf("%016x", secret)
	cs := s.AdminClient()
	_, err := cs.CoreV1().Secrets("kube-system").Create(ctx, &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + tokenID},
		Type:       v1.SecretType("bootstrap.kubernetes.io/token"),
		StringData: map[string]string{
			"token-id": tokenID, "token-secret": tokenSecret,
			"usage-bootstrap-authentication": "true",
			"expiration":                     time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("bootstrap token: %w", err)
	}
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "nodekit-test:node-bootstrapper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:bootstrappers"}},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("bootstrap binding: %w", err)
	}
	admin := s.AdminConfig()
	ca := admin.CAData
	if len(ca) == 0 && admin.CAFile != "" {
		if ca, err = os.ReadFile(admin.CAFile); err != nil {
			return err
		}
	}
	return clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"test": {Server: admin.Host, CertificateAuthorityData: ca, TLSServerName: admin.ServerName}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"bootstrap": {Token: tokenID + "." + tokenSecret}},
		Contexts:       map[string]*clientcmdapi.Context{"bootstrap": {Cluster: "test", AuthInfo: "bootstrap"}},
		CurrentContext: "bootstrap",
	}, path)
}

// SignerConfig says how StartCSRSigner answers requests.
type SignerConfig struct {
	// ClientLifetime and ServingLifetime are the lifetimes of the node
	// client (kubernetes.io/kube-apiserver-client-kubelet) and kubelet
	// serving (kubernetes.io/kubelet-serving) certificates it issues,
	// from the moment of signing (not backdated, unlike the
	// kube-controller-manager's signer, so that short lifetimes rotate on
	// a test's time scale).
	ClientLifetime, ServingLifetime time.Duration
	// ApproveServing, if set, holds serving requests until it returns
	// true (polled), as an operator approving them would.
	ApproveServing func() bool
}

// Signer approves and signs node certificate requests with the CA the
// apiserver trusts for clients and kubelets (KubeletCAFile), in place of
// the kube-controller-manager's csrapproving and csrsigning controllers.
type Signer struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	issued map[string]int // by signer name
}

// Issued returns how many certificates the signer issued for signerName.
func (g *Signer) Issued(signerName string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.issued[signerName]
}

// Stop ends the signer and waits for it.
func (g *Signer) Stop() {
	g.cancel()
	g.wg.Wait()
}

// StartCSRSigner starts a Signer.
func (s *Server) StartCSRSigner(ctx context.Context, cfg SignerConfig) (*Signer, error) {
	if cfg.ClientLifetime <= 0 || cfg.ServingLifetime <= 0 {
		return nil, errors.New("signer: lifetimes must be positive")
	}
	ctx, cancel := context.WithCancel(ctx)
	g := &Signer{cancel: cancel, issued: map[string]int{}}
	cs := s.AdminClient()
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Certificates().V1().CertificateSigningRequests().Informer()
	pending := make(chan string, 100)
	enqueue := func(obj any) {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok && len(csr.Status.Certificate) == 0 {
			select {
			case pending <- csr.Name:
			default:
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }}); err != nil {
		cancel()
		return nil, err
	}
	factory.Start(ctx.Done())
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer factory.Shutdown()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case name := <-pending:
				g.answer(ctx, s, cfg, name)
			case <-tick.C: // serving requests held by ApproveServing
				for _, o := range inf.GetStore().List() {
					enqueue(o)
				}
			}
		}
	}()
	return g, nil
}

func (g *Signer) answer(ctx context.Context, s *Server, cfg SignerConfig, name string) {
	csrs := s.AdminClient().CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Get(ctx, name, metav1.GetOptions{})
	if err != nil || len(csr.Status.Certificate) > 0 {
		return
	}
	var lifetime time.Duration
	usage := x509.ExtKeyUsageClientAuth
	switch csr.Spec.SignerName {
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		lifetime = cfg.ClientLifetime
	case certificatesv1.KubeletServingSignerName:
		if cfg.ApproveServing != nil && !cfg.ApproveServing() {
			return
		}
		lifetime, usage = cfg.ServingLifetime, x509.ExtKeyUsageServerAuth
	default:
		return
	}
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed {
			return
		}
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		return
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return
	}
	now := time.Now()
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: serial, Subject: req.Subject, DNSNames: req.DNSNames, IPAddresses: req.IPAddresses,
		NotBefore: now, NotAfter: now.Add(lifetime),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}, s.kubelet.ca, req.PublicKey, s.kubelet.caKey)
	if err != nil {
		return
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue, Reason: "NodekitTestSigner", Message: "approved by the test signer",
	})
	if csr, err = csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		return
	}
	csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if _, err := csrs.UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return
	}
	g.mu.Lock()
	g.issued[csr.Spec.SignerName]++
	g.mu.Unlock()
}
