package integration

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/examples/kubelet/agent"
	"github.com/nodekit/nodekit/nodecerts"
	"github.com/nodekit/nodekit/test/apiserver"
)

// A node joins as nodes join: a bootstrap token requests its client
// certificate, which the agent then rotates (every ~5 s here) without
// losing its node status or lease; the kubelet API's serving certificate
// is requested from the cluster, nothing is served until it is approved,
// and then the API server reaches the kubelet API verifying it
// (--kubelet-certificate-authority).
func TestReferenceAgentJoinsWithABootstrapToken(t *testing.T) {
	const node, ns = "bootstrap-join", "default"
	ctx := context.Background()
	admin := srv.AdminClient()
	ensureDefaultServiceAccount(t, admin, ns)
	dir := t.TempDir()
	boot := filepath.Join(dir, "bootstrap-kubelet.conf")
	require.NoError(t, srv.BootstrapKubeconfig(ctx, boot, "nkjoin"))
	var approveServing atomic.Bool
	signer, err := srv.StartCSRSigner(ctx, apiserver.SignerConfig{ClientLifetime: 6 * time.Second,
		ServingLifetime: time.Hour, ApproveServing: approveServing.Load})
	require.NoError(t, err)
	defer signer.Stop()

	creds, err := nodecerts.NewClient(nodecerts.ClientConfig{NodeName: node, Kubeconfig: filepath.Join(dir, "kubelet.conf"),
		BootstrapKubeconfig: boot, CertDir: filepath.Join(dir, "pki"), Rotate: true})
	require.NoError(t, err)
	sim := crisim.New(crisim.Config{})
	sim.ScriptLogLines(crisim.Match{Namespace: ns, Pod: "joined", Container: "app"}, crisim.LogLine{Text: "hello from a joined node"})
	ip, _ := nodeAddress()
	r := startAgent(t, node, sim, filepath.Join(dir, "root"), nil, func(o *agent.Options) {
		o.Kube, o.Credentials = creds.RESTConfig(), creds
		o.ServerTLSBootstrap, o.CertDir = true, filepath.Join(dir, "pki")
		o.APIAddr, o.NodeIP = net.JoinHostPort(ip, "0"), ip
		o.ClientCAFile, o.TokenWebhook, o.AuthorizationMode = srv.KubeletCAFile(), true, agent.AuthorizationWebhook
	})
	defer func() { require.NoError(t, r.stop(t)) }()

	eventually := func(msg string, f func() bool) {
		t.Helper()
		require.Eventually(t, f, 30*time.Second, 50*time.Millisecond, msg)
	}
	eventually("the node registers as itself, with its bootstrapped certificate", func() bool {
		n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil && n.Status.DaemonEndpoints.KubeletEndpoint.Port > 0
	})
	first := creds.Current()
	require.NotNil(t, first)
	assert.Equal(t, "system:node:"+node, first.Leaf.Subject.CommonName)

	_, err = admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "joined"},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "app", Image: "busybox"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	defer func() {
		_ = admin.CoreV1().Pods(ns).Delete(ctx, "joined", metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	}()
	eventually("the pod runs", func() bool {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, "joined", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning
	})
	logs := func() (string, error) {
		rc, err := admin.CoreV1().Pods(ns).GetLogs("joined", &v1.PodLogOptions{}).Stream(ctx)
		if err != nil {
			return "", err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		return string(b), err
	}

	// Until the serving request is approved: no certificate, the API
	// server cannot reach the kubelet API, and the node says why.
	eventually("a pending serving request is reported on the node", func() bool {
		evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + node})
		if err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Reason == "ServingCertificatePending" && strings.Contains(e.Message, "kubectl certificate approve csr-") {
				return true
			}
		}
		return false
	})
	_, err = logs()
	require.Error(t, err, "no serving certificate, no logs")
	approveServing.Store(true)
	eventually("logs through the API server once the serving certificate is issued", func() bool {
		got, err := logs()
		return err == nil && got == "hello from a joined node\n"
	})
	assert.Equal(t, 1, signer.Issued(certificatesv1.KubeletServingSignerName))

	// The 6 s client certificate is replaced again and again; the node
	// keeps renewing its lease with each.
	eventually("the client certificate rotates twice", func() bool {
		return signer.Issued(certificatesv1.KubeAPIServerClientKubeletSignerName) >= 3
	})
	cur := creds.Current()
	require.NotNil(t, cur)
	assert.NotEqual(t, first.Leaf.SerialNumber, cur.Leaf.SerialNumber)
	rotatedAt := time.Now()
	eventually("the lease is renewed with the rotated certificate", func() bool {
		l, err := admin.CoordinationV1().Leases(apiserver.NodeLeaseNamespace).Get(ctx, node, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(rotatedAt)
	})
	got, err := logs()
	require.NoError(t, err)
	assert.Equal(t, "hello from a joined node\n", got)
}
