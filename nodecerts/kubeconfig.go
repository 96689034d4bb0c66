package nodecerts

import (
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
)

// loadKubeconfig reads a kubeconfig file into a rest.Config (its current
// context), with the certificate and key files read into CertData and
// KeyData.
func loadKubeconfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// kubeconfigValid tells whether the kubeconfig at path exists and holds a
// client certificate that has not expired at now. A kubeconfig that does
// not parse, or has no certificate, is not valid (and is replaced by
// bootstrapping), as the kubelet treats it.
func kubeconfigValid(path string, now time.Time) (bool, string, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return false, "it does not exist", nil
	} else if err != nil {
		return false, "", fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg, err := loadKubeconfig(path)
	if err != nil {
		return false, err.Error(), nil
	}
	certs, err := certutil.ParseCertsPEM(cfg.CertData)
	if err != nil || len(certs) == 0 {
		return false, "it has no client certificate", nil
	}
	for _, c := range certs {
		if now.After(c.NotAfter) {
			return false, fmt.Sprintf("its client certificate expired at %s", c.NotAfter.UTC().Format(time.RFC3339)), nil
		}
	}
	return true, "", nil
}

// writeKubeconfig writes a kubeconfig for the server and CA of from whose
// client certificate and key are the file pem (the certificate store's
// current pair), readable by its owner only.
func writeKubeconfig(path string, from *rest.Config, pem string) error {
	cluster := &clientcmdapi.Cluster{
		Server:                from.Host,
		InsecureSkipTLSVerify: from.Insecure,
		TLSServerName:         from.ServerName,
	}
	if from.CAFile != "" {
		cluster.CertificateAuthority = from.CAFile
	} else {
		cluster.CertificateAuthorityData = from.CAData
	}
	kc := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"default-cluster": cluster},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"default-auth": {ClientCertificate: pem, ClientKey: pem}},
		Contexts:       map[string]*clientcmdapi.Context{"default-context": {Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default"}},
		CurrentContext: "default-context",
	}
	if err := clientcmd.WriteToFile(kc, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}
