package apiserver

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/etcd/server/v3/embed"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
)

// Flags are the kube-apiserver flags the harness always sets: the same
// authorization and admission a production control plane applies to nodes.
// The kubelet client flags (certificate, key, certificate authority and
// preferred address types; see KubeletCAFile) are added at Start.
var Flags = []string{
	"--authorization-mode=Node,RBAC",
	"--enable-admission-plugins=NodeRestriction",
}

// NodeLeaseNamespace is where node Leases live.
const NodeLeaseNamespace = "kube-node-lease"

// Server is a running etcd + kube-apiserver pair.
type Server struct {
	admin    *rest.Config
	logs     *ring
	tb       *mainTB
	etcd     *embed.Etcd
	etcdDir  string
	kubelet  *kubeletPKI
	stopOnce sync.Once
	teardown func()
}

// Start starts etcd and kube-apiserver and waits until the apiserver is
// healthy and the kube-node-lease namespace exists. klog output is captured
// in memory (see Logs); set NODEKIT_APISERVER_LOGS=1 to also stream it to
// stderr. On error the returned Server is already stopped and is only good
// for Logs.
func Start() (*Server, error) {
	logs := newRing(4 << 20)
	if os.Getenv("NODEKIT_APISERVER_LOGS") == "1" {
		logs.tee = os.Stderr
	}
	silenceKlog(logs)

	s := &Server{logs: logs, tb: &mainTB{out: logs}}
	dir, err := os.MkdirTemp("", "nodekit-etcd")
	if err != nil {
		return s, err
	}
	s.etcdDir = dir
	e, clientURL, err := startEtcd(dir, logs)
	if err != nil {
		s.Stop()
		return s, err
	}
	s.etcd = e
	if err := os.Mkdir(s.pkiDir(), 0o700); err != nil {
		s.Stop()
		return s, err
	}
	if s.kubelet, err = newKubeletPKI(s.pkiDir()); err != nil {
		s.Stop()
		return s, fmt.Errorf("kubelet PKI: %w", err)
	}

	storage := storagebackend.NewDefaultConfig(path.Join(uuid.New().String(), "registry"), nil)
	storage.Transport.ServerList = []string{clientURL}
	result, err := startAPIServer(s.tb, storage, append(Flags[:len(Flags):len(Flags)], s.kubelet.flags...))
	if err != nil {
		s.Stop()
		return s, err
	}
	s.teardown = result.TearDownFn
	s.admin = rest.CopyConfig(result.ClientConfig)
	if err := s.waitReady(); err != nil {
		s.Stop()
		return s, fmt.Errorf("kube-apiserver not ready: %w", err)
	}
	return s, nil
}

// startAPIServer calls the upstream test server, turning its fatal paths
// (which panic through mainTB.FailNow) into errors.
func startAPIServer(tb *mainTB, storage *storagebackend.Config, flags []string) (res kubeapiservertesting.TestServer, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kube-apiserver failed to start: %v", r)
		}
	}()
	res, err = kubeapiservertesting.StartTestServer(tb, nil, flags, storage)
	if err != nil {
		return res, fmt.Errorf("start kube-apiserver: %w", err)
	}
	return res, nil
}

func (s *Server) waitReady() error {
	cs, err := kubernetes.NewForConfig(s.admin)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, NodeLeaseNamespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, nil
	})
}

// Stop shuts the apiserver and etcd down and removes their data. It is safe
// to call more than once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.teardown != nil {
			s.teardown()
		}
		s.tb.runCleanups()
		if s.etcd != nil {
			s.etcd.Close()
		}
		if s.etcdDir != "" {
			_ = os.RemoveAll(s.etcdDir)
			_ = os.RemoveAll(s.pkiDir())
		}
	})
}

// pkiDir holds the kubelet PKI, next to etcd's data.
func (s *Server) pkiDir() string { return s.etcdDir + "-kubelet-pki" }

// Logs returns the most recent output of the apiserver, etcd and klog.
func (s *Server) Logs() []byte { return s.logs.Bytes() }

// AdminConfig returns a copy of a rest.Config with full (system:masters)
// rights.
func (s *Server) AdminConfig() *rest.Config { return rest.CopyConfig(s.admin) }

// AdminClient returns a clientset with full rights.
func (s *Server) AdminClient() kubernetes.Interface { return mustClient(s.AdminConfig()) }

// NodeConfig returns a rest.Config whose requests are made as the node
// identity of nodeName: user system:node:<nodeName> in group system:nodes.
// The apiserver authenticates the admin credentials, then authorizes and
// admits the request as the node (impersonation), so the Node authorizer and
// NodeRestriction apply exactly as they do to a kubelet's client
// certificate.
func (s *Server) NodeConfig(nodeName string) *rest.Config {
	cfg := s.AdminConfig()
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:node:" + nodeName,
		Groups:   []string{"system:nodes", "system:authenticated"},
	}
	return cfg
}

// NodeClient returns a clientset acting as the node identity of nodeName.
func (s *Server) NodeClient(nodeName string) kubernetes.Interface {
	return mustClient(s.NodeConfig(nodeName))
}

func mustClient(cfg *rest.Config) kubernetes.Interface {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		// NewForConfig only fails on a malformed config, which the harness
		// builds itself.
		panic(err)
	}
	return cs
}

// silenceKlog routes the global klog output (used by the apiserver) into w
// instead of stderr.
func silenceKlog(w *ring) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for k, v := range map[string]string{
		"logtostderr":     "false",
		"alsologtostderr": "false",
		"stderrthreshold": "FATAL",
		"one_output":      "true",
	} {
		_ = fs.Set(k, v)
	}
	klog.SetOutput(w)
	klog.LogToStderr(false)
}

// Main starts the server, stores it in *srv, runs the tests and stops the
// server. If any test failed, or the server did not start, the captured
// apiserver log is printed to stderr.
func Main(m *testing.M, srv **Server) {
	os.Exit(run(m, srv))
}

func run(m *testing.M, srv **Server) int {
	start := time.Now()
	s, err := Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "apiserver harness: %v\n", err)
		if s != nil {
			os.Stderr.Write(s.Logs())
		}
		return 1
	}
	fmt.Fprintf(os.Stderr, "apiserver harness: kube-apiserver ready in %s\n", time.Since(start).Round(time.Millisecond))
	*srv = s
	code := m.Run()
	if code != 0 || s.tb.Failed() {
		fmt.Fprintln(os.Stderr, "apiserver harness: tests failed; recent kube-apiserver/etcd log follows")
		os.Stderr.Write(s.Logs())
	}
	s.Stop()
	return code
}
