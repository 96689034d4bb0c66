package apiserver

import (
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
	"time"
)

// KubeletClientUser and KubeletClientGroup are the identity of the
// apiserver's kubelet client certificate (kubeadm's
// apiserver-kubelet-client): a kubelet authorizes the apiserver's requests
// to it as this user.
const (
	KubeletClientUser  = "kube-apiserver-kubelet-client"
	KubeletClientGroup = "system:masters"
)

// kubeletPKI is the certificate authority between the apiserver and
// kubelets, as kubeadm sets it up: one CA signs the apiserver's kubelet
// client certificate (--kubelet-client-certificate; kubelets trust it with
// --client-ca-file) and the kubelets' serving certificates (the apiserver
// verifies them with --kubelet-certificate-authority).
type kubeletPKI struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caFile string
	flags  []string
}

func newKubeletPKI(dir string) (*kubeletPKI, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "nodekit-test-kubelet-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p := &kubeletPKI{dir: dir, ca: ca, caKey: key, caFile: filepath.Join(dir, "kubelet-ca.crt")}
	if err := writePEM(p.caFile, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	cert, keyFile, err := p.issue("apiserver-kubelet-client", &x509.Certificate{
		Subject:     pkix.Name{CommonName: KubeletClientUser, Organization: []string{KubeletClientGroup}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	p.flags = []string{
		"--kubelet-client-certificate=" + cert,
		"--kubelet-client-key=" + keyFile,
		"--kubelet-certificate-authority=" + p.caFile,
		// The same CA authenticates node client certificates (kubeadm's
		// cluster CA does both), and bootstrap tokens are accepted, so a
		// node can join by TLS bootstrapping (BootstrapKubeconfig,
		// StartCSRSigner).
		"--client-ca-file=" + p.caFile,
		"--enable-bootstrap-token-auth",
		// kubeadm's order: a node's name need not resolve.
		"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
	}
	return p, nil
}

// issue signs a certificate for tmpl's subject, names and usages with a
// new key, and writes <name>.crt and <name>.key under p.dir.
func (p *kubeletPKI) issue(name string, tmpl *x509.Certificate) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return "", "", err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = p.ca.NotBefore, p.ca.NotAfter
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(p.dir, name+".crt"), filepath.Join(p.dir, name+".key")
	if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
		return "", "", err
	}
	return certFile, keyFile, writePEM(keyFile, "EC PRIVATE KEY", keyDER)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// KubeletCAFile is the CA between the apiserver and kubelets: give it to a
// kubelet API as its client CA (--client-ca-file) to admit the apiserver,
// and to clients of a kubelet API to verify its serving certificate.
func (s *Server) KubeletCAFile() string { return s.kubelet.caFile }

// KubeletServingCert issues a kubelet serving certificate for the node's
// addresses (IPs and DNS names), signed by the CA the apiserver verifies
// kubelets with, and writes it to <dir>/<node>.crt and .key.
func (s *Server) KubeletServingCert(dir, node string, addrs ...string) (certFile, keyFile string, err error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, a)
		}
	}
	p := *s.kubelet
	p.dir = dir
	certFile, keyFile, err = p.issue(node, tmpl)
	if err != nil {
		return "", "", fmt.Errorf("kubelet serving certificate for %s: %w", node, err)
	}
	return certFile, keyFile, nil
}
