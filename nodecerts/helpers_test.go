package nodecerts_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	certificatesv1client "k8s.io/client-go/kubernetes/typed/certificates/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// testCA signs certificates as a cluster's signer would.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

var serial atomic.Int64

// sign issues a certificate for a PEM certificate request, valid from now
// for lifetime (notBefore may move it).
func (ca *testCA) sign(t testing.TB, request []byte, notBefore time.Time, lifetime time.Duration, usage x509.ExtKeyUsage) []byte {
	t.Helper()
	block, _ := pem.Decode(request)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(100 + serial.Add(1)), Subject: req.Subject,
		DNSNames: req.DNSNames, IPAddresses: req.IPAddresses,
		NotBefore: notBefore, NotAfter: notBefore.Add(lifetime),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, req.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// keyPair writes a certificate for cn signed by ca, valid until notAfter,
// and its key, returning both paths.
func (ca *testCA) keyPair(t testing.TB, dir, cn string, notAfter time.Time) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(100 + serial.Add(1)), Subject: pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}},
		NotBefore: notAfter.Add(-48 * time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, cn+".crt"), filepath.Join(dir, cn+".key")
	writeFile(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	writeFile(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return certFile, keyFile
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeKubeconfig writes a kubeconfig for server with ca, authenticated by
// a token or by a certificate and key file.
func writeKubeconfig(t testing.TB, path, server string, ca []byte, token, certFile, keyFile string) {
	t.Helper()
	kc := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: server, CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": {Token: token, ClientCertificate: certFile, ClientKey: keyFile}},
		Contexts:       map[string]*clientcmdapi.Context{"x": {Cluster: "c", AuthInfo: "u"}},
		CurrentContext: "x",
	}
	if err := clientcmd.WriteToFile(kc, path); err != nil {
		t.Fatal(err)
	}
}

// fakeSigner is a fake API server's CSR flow: it names created requests
// (the fake clientset does not honour generateName) and answers each with
// decide, as the csrapproving and csrsigning controllers would.
type fakeSigner struct {
	t      testing.TB
	client *fake.Clientset
	ca     *testCA
	mu     sync.Mutex
	n      int
	// decide returns the lifetime to issue, or deny.
	decide func(csr *certificatesv1.CertificateSigningRequest) (lifetime time.Duration, deny bool)
	// configs records the rest.Config each clientset was asked for with.
	configs []*rest.Config
}

func newFakeSigner(t testing.TB, ca *testCA) *fakeSigner {
	s := &fakeSigner{t: t, client: fake.NewClientset(), ca: ca}
	s.client.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		csr := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		s.mu.Lock()
		s.n++
		csr.Name = fmt.Sprintf("%s%d", csr.GenerateName, s.n)
		csr.UID = types.UID(csr.Name)
		if csr.Spec.Username == "" { // the API server records the requester
			csr.Spec.Username = "system:node:n1"
		}
		csr.CreationTimestamp = metav1.Now()
		s.mu.Unlock()
		go s.answer(csr.DeepCopy())
		return false, nil, nil
	})
	// The fake clientset ignores field selectors; the API server (and
	// client-go's WaitForCertificate) select one request by name.
	gvr := certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests")
	byName := func(sel fields.Selector, obj runtime.Object) bool {
		if sel == nil || sel.Empty() {
			return true
		}
		csr, ok := obj.(*certificatesv1.CertificateSigningRequest)
		return ok && sel.Matches(fields.Set{"metadata.name": csr.Name})
	}
	s.client.PrependReactor("list", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, err := s.client.Tracker().List(gvr, certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), "")
		if err != nil {
			return true, nil, err
		}
		list := obj.(*certificatesv1.CertificateSigningRequestList).DeepCopy()
		sel := a.(k8stesting.ListAction).GetListRestrictions().Fields
		items := list.Items[:0]
		for i := range list.Items {
			if byName(sel, &list.Items[i]) {
				items = append(items, list.Items[i])
			}
		}
		list.Items = items
		return true, list, nil
	})
	// The tracker's watch starts at "now": an answer written between
	// client-go's list and its watch would be lost, where the API server
	// resumes from the list's resourceVersion. So a watch first replays
	// the requests it selects as they are now (a repeat is harmless).
	s.client.PrependWatchReactor("certificatesigningrequests", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := s.client.Tracker().Watch(gvr, "")
		if err != nil {
			return true, nil, err
		}
		obj, err := s.client.Tracker().List(gvr, certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), "")
		if err != nil {
			w.Stop()
			return true, nil, err
		}
		sel := a.(k8stesting.WatchAction).GetWatchRestrictions().Fields
		out := make(chan watch.Event)
		pw := watch.NewProxyWatcher(out)
		go func() {
			defer close(out)
			defer w.Stop()
			send := func(ev watch.Event) bool {
				if !byName(sel, ev.Object) {
					return true
				}
				select {
				case out <- ev:
					return true
				case <-pw.StopChan():
					return false
				}
			}
			for _, csr := range obj.(*certificatesv1.CertificateSigningRequestList).Items {
				if !send(watch.Event{Type: watch.Modified, Object: csr.DeepCopy()}) {
					return
				}
			}
			for {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok || !send(ev) {
						return
					}
				case <-pw.StopChan():
					return
				}
			}
		}()
		return true, pw, nil
	})
	return s
}

func (s *fakeSigner) answer(csr *certificatesv1.CertificateSigningRequest) {
	if s.decide == nil {
		return
	}
	lifetime, deny := s.decide(csr)
	cond := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: "True", Reason: "AutoApproved"}
	if deny {
		cond = certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateDenied, Status: "True", Reason: "Nope", Message: "not this node"}
	} else {
		usage := x509.ExtKeyUsageClientAuth
		if csr.Spec.SignerName == certificatesv1.KubeletServingSignerName {
			usage = x509.ExtKeyUsageServerAuth
		}
		csr.Status.Certificate = s.ca.sign(s.t, csr.Spec.Request, time.Now(), lifetime, usage)
	}
	gvr := certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests")
	// The object may not be in the tracker yet: the reactor runs first.
	for i := 0; i < 100; i++ {
		obj, err := s.client.Tracker().Get(gvr, "", csr.Name)
		if err == nil {
			stored := obj.(*certificatesv1.CertificateSigningRequest).DeepCopy()
			stored.Status = csr.Status
			stored.Status.Conditions = append(stored.Status.Conditions, cond)
			if err := s.client.Tracker().Update(gvr, stored, ""); err == nil {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.t.Errorf("fake signer: could not answer %s", csr.Name)
}

// newClientset is a ClientConfig.NewClientset recording its configs. A
// clientset of a bootstrap token creates requests as the token's user;
// any other as the node n1.
func (s *fakeSigner) newClientset(cfg *rest.Config) (kubernetes.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.configs = append(s.configs, cfg)
	if cfg.BearerToken != "" {
		id, _, _ := strings.Cut(cfg.BearerToken, ".")
		return asUser{Clientset: s.client, user: "system:bootstrap:" + id}, nil
	}
	return s.client, nil
}

// asUser is a clientset whose certificate signing requests the fake API
// server records as made by user.
type asUser struct {
	*fake.Clientset
	user string
}

func (c asUser) CertificatesV1() certificatesv1client.CertificatesV1Interface {
	return asUserCertificates{CertificatesV1Interface: c.Clientset.CertificatesV1(), user: c.user}
}

type asUserCertificates struct {
	certificatesv1client.CertificatesV1Interface
	user string
}

func (c asUserCertificates) CertificateSigningRequests() certificatesv1client.CertificateSigningRequestInterface {
	return asUserCSRs{CertificateSigningRequestInterface: c.CertificatesV1Interface.CertificateSigningRequests(), user: c.user}
}

type asUserCSRs struct {
	certificatesv1client.CertificateSigningRequestInterface
	user string
}

func (c asUserCSRs) Create(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, opts metav1.CreateOptions) (*certificatesv1.CertificateSigningRequest, error) {
	csr = csr.DeepCopy()
	csr.Spec.Username = c.user
	return c.CertificateSigningRequestInterface.Create(ctx, csr, opts)
}

// forge stores a certificate signing request someone else made: by user,
// for subject cn with the given names, for signer, created at created,
// with its own key. decided, if set, is its outcome (an approval with a
// certificate signed by the CA, or a denial).
func (s *fakeSigner) forge(name, user, cn, signer string, dnsNames []string, ips []net.IP, created time.Time,
	decided certificatesv1.RequestConditionType) {
	s.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		s.t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}}, DNSNames: dnsNames, IPAddresses: ips,
	}, key)
	if err != nil {
		s.t.Fatal(err)
	}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	usage := x509.ExtKeyUsageClientAuth
	if signer == certificatesv1.KubeletServingSignerName {
		usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
		usage = x509.ExtKeyUsageServerAuth
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(created)},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: signer, Usages: usages, Username: user, Groups: []string{"system:authenticated"},
		},
	}
	switch decided {
	case certificatesv1.CertificateApproved:
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: decided, Status: "True", Reason: "OperatorApproved"}}
		csr.Status.Certificate = s.ca.sign(s.t, csr.Spec.Request, time.Now(), time.Hour, usage)
	case certificatesv1.CertificateDenied:
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: decided, Status: "True", Reason: "OperatorDenied", Message: "forged"}}
	}
	if err := s.client.Tracker().Add(csr); err != nil {
		s.t.Fatal(err)
	}
}

func (s *fakeSigner) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}
