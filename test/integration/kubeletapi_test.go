package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/nodekit/nodekit/crisim"
	"github.com/nodekit/nodekit/examples/kubelet/agent"
)

// TestKubeletAPIThroughAPIServer runs the reference agent with its kubelet
// API on and reaches it the way a cluster does: kubectl logs, exec and
// node proxy requests go to the kube-apiserver, which calls the agent with
// its kubelet client certificate (admitted by the agent's client CA and
// authorized by SubjectAccessReview) after verifying the agent's serving
// certificate. A token sent straight to the agent is authenticated by
// TokenReview and authorized per subresource.
func TestKubeletAPIThroughAPIServer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), ignoreAPIServerWaiters)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const node, ns = "kubeletapi-node", "kubeletapi"
	admin := srv.AdminClient()
	_, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	ensureDefaultServiceAccount(t, admin, ns)

	// The apiserver's node proxy refuses loopback addresses; pods/log and
	// pods/exec do not. Serve on an address of this machine the proxy
	// accepts if there is one.
	ip, proxyable := nodeAddress()
	dir := t.TempDir()
	certFile, keyFile, err := srv.KubeletServingCert(dir, node, ip)
	require.NoError(t, err)

	sim := crisim.New(crisim.Config{})
	sim.ScriptLogLines(crisim.Match{Namespace: ns, Pod: "logger", Container: "app"},
		crisim.LogLine{Text: "starting app"},
		crisim.LogLine{Text: "warning: on stderr", Stderr: true},
		crisim.LogLine{Text: "listening"})
	shell := crisim.Match{Namespace: ns, Pod: "shell", Container: "sh"}
	sim.ScriptExec(shell, []string{"ls", "/"}, crisim.ExecResult{Stdout: "bin\netc\nusr\n"})
	sim.ScriptExec(shell, []string{"sh", "-c", "exit 3"}, crisim.ExecResult{Stdout: "partial\n", Stderr: "failing\n", ExitCode: 3})

	stop := runAgentWith(t, agent.Options{NodeName: node, Kube: srv.NodeConfig(node), Sim: sim,
		HealthzAddr: "-", EvictionHard: "memory.available<500Mi",
		APIAddr: net.JoinHostPort(ip, "0"), NodeIP: ip, TLSCertFile: certFile, TLSKeyFile: keyFile,
		ClientCAFile: srv.KubeletCAFile(), TokenWebhook: true, AuthorizationMode: agent.AuthorizationWebhook})
	defer stop()
	eventually := func(t *testing.T, msg string, f func() bool) {
		t.Helper()
		require.Eventually(t, f, 20*time.Second, 50*time.Millisecond, msg)
	}

	var port int32
	eventually(t, "node registers with its kubelet endpoint and address", func() bool {
		n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false
		}
		port = n.Status.DaemonEndpoints.KubeletEndpoint.Port
		return port > 0 && hasAddress(n, v1.NodeInternalIP, ip)
	})
	pods := admin.CoreV1().Pods(ns)
	for _, p := range []struct{ pod, container string }{{"logger", "app"}, {"shell", "sh"}} {
		_, err := pods.Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.pod},
			Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: p.container, Image: "busybox"}}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	running := func(name string) *v1.Pod {
		var pod *v1.Pod
		eventually(t, name+" running", func() bool {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Running == nil {
				return false
			}
			pod = p
			return true
		})
		return pod
	}
	logger, _ := running("logger"), running("shell")
	first := criID(logger.Status.ContainerStatuses[0].ContainerID)
	scripted := "starting app\nwarning: on stderr\nlistening\n"

	// podLogs reads pods/log as kubectl logs does (a stream, with the
	// server's Status as the error).
	podLogs := func(t *testing.T, opts *v1.PodLogOptions) (string, error) {
		t.Helper()
		rc, err := pods.GetLogs("logger", opts).Stream(ctx)
		if err != nil {
			return "", err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		require.NoError(t, err)
		return string(b), nil
	}

	t.Run("logs", func(t *testing.T) {
		got, err := podLogs(t, &v1.PodLogOptions{Container: "app"})
		require.NoError(t, err)
		require.Equal(t, scripted, got, "stdout and stderr, in order")
		got, err = podLogs(t, &v1.PodLogOptions{TailLines: ptr.To[int64](1)})
		require.NoError(t, err)
		require.Equal(t, "listening\n", got)
		got, err = podLogs(t, &v1.PodLogOptions{Timestamps: true, LimitBytes: ptr.To[int64](200)})
		require.NoError(t, err)
		ts, line, _ := strings.Cut(strings.SplitN(got, "\n", 2)[0], " ")
		_, err = time.Parse(time.RFC3339Nano, ts)
		require.NoError(t, err, "timestamped line %q", got)
		require.Equal(t, "starting app", line)

		_, err = podLogs(t, &v1.PodLogOptions{Previous: true})
		require.True(t, apierrors.IsBadRequest(err), "no previous container yet: %v", err)
		// The kubelet's message (kubeletapi ends it with a newline).
		require.Equal(t, `previous terminated container "app" in pod "logger" not found`, strings.TrimSuffix(err.Error(), "\n"))
	})

	t.Run("follow", func(t *testing.T) {
		fctx, fcancel := context.WithTimeout(ctx, 20*time.Second)
		defer fcancel()
		rc, err := pods.GetLogs("logger", &v1.PodLogOptions{Follow: true}).Stream(fctx)
		require.NoError(t, err)
		defer rc.Close()
		r := bufio.NewReader(rc)
		readLines := func(n int) string {
			t.Helper()
			var b strings.Builder
			for range n {
				l, err := r.ReadString('\n')
				require.NoError(t, err)
				b.WriteString(l)
			}
			return b.String()
		}
		require.Equal(t, scripted, readLines(3))
		// A line printed while the stream is open arrives on it.
		require.NoError(t, sim.AppendLog(first, crisim.LogLine{Text: "printed while followed"}))
		require.Equal(t, "printed while followed\n", readLines(1))
		// The follow ends when the container exits (and the agent
		// restarts it: restartPolicy Always, no back-off the first time).
		exited := time.Now()
		require.NoError(t, sim.ExitContainer(first, 1, ""))
		rest, err := io.ReadAll(r)
		require.NoError(t, err, "the follow ends with EOF")
		require.Empty(t, string(rest))
		t.Logf("follow ended %s after the container exited", time.Since(exited).Round(time.Millisecond))
	})

	t.Run("previous", func(t *testing.T) {
		var cur string
		eventually(t, "logger restarted", func() bool {
			p, err := pods.Get(ctx, "logger", metav1.GetOptions{})
			if err != nil || p.Status.ContainerStatuses[0].RestartCount != 1 || p.Status.ContainerStatuses[0].State.Running == nil {
				return false
			}
			cur = criID(p.Status.ContainerStatuses[0].ContainerID)
			return true
		})
		require.NotEqual(t, first, cur)
		require.NoError(t, sim.AppendLog(cur, crisim.LogLine{Text: "second run"}))
		got, err := podLogs(t, &v1.PodLogOptions{})
		require.NoError(t, err)
		require.Equal(t, scripted+"second run\n", got, "the current instance's log")
		got, err = podLogs(t, &v1.PodLogOptions{Previous: true})
		require.NoError(t, err)
		require.Equal(t, scripted+"printed while followed\n", got, "the exited instance's log")
	})

	t.Run("exec", func(t *testing.T) {
		// kubectl's two protocols: SPDY, proxied to the kubelet as is, and
		// WebSocket (v5), which the apiserver translates to SPDY.
		for _, proto := range []string{"SPDY", "WebSocket"} {
			exec := func(stdin string, cmd ...string) (stdout, stderr string, err error) {
				t.Helper()
				opts := &v1.PodExecOptions{Container: "sh", Command: cmd, Stdout: true, Stderr: true, Stdin: stdin != ""}
				u := admin.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name("shell").
					SubResource("exec").VersionedParams(opts, scheme.ParameterCodec).URL()
				var ex remotecommand.Executor
				if proto == "SPDY" {
					ex, err = remotecommand.NewSPDYExecutor(srv.AdminConfig(), "POST", u)
				} else {
					ex, err = remotecommand.NewWebSocketExecutor(srv.AdminConfig(), "GET", u.String())
				}
				require.NoError(t, err)
				var out, errOut bytes.Buffer
				so := remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}
				if stdin != "" {
					so.Stdin = strings.NewReader(stdin)
				}
				err = ex.StreamWithContext(ctx, so)
				return out.String(), errOut.String(), err
			}
			stdout, stderr, err := exec("", "ls", "/")
			require.NoError(t, err, proto)
			require.Equal(t, "bin\netc\nusr\n", stdout, proto)
			require.Empty(t, stderr, proto)

			stdout, stderr, err = exec("", "sh", "-c", "exit 3")
			var exitErr utilexec.ExitError
			require.ErrorAs(t, err, &exitErr, proto)
			require.Equal(t, 3, exitErr.ExitStatus(), proto)
			require.Equal(t, "partial\n", stdout, proto)
			require.Equal(t, "failing\n", stderr, proto)

			stdout, _, err = exec("hello through stdin\n", "cat")
			require.NoError(t, err, proto)
			require.Equal(t, "hello through stdin\n", stdout, proto)
		}
	})

	t.Run("port-forward", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		served := make(chan error, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				served <- err
				return
			}
			defer c.Close()
			line, err := bufio.NewReader(c).ReadString('\n')
			if err == nil {
				_, err = io.WriteString(c, "pong: "+line)
			}
			served <- err
		}()
		sim.ScriptPortForward(crisim.Match{Namespace: ns, Pod: "shell"}, 8080, ln.Addr().String())

		// As kubectl port-forward does: SPDY tunneled over a WebSocket.
		u := admin.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name("shell").SubResource("portforward").URL()
		dialer, err := portforward.NewSPDYOverWebsocketDialer(u, srv.AdminConfig())
		require.NoError(t, err)
		conn, proto, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
		require.NoError(t, err)
		defer conn.Close()
		require.Equal(t, portforward.PortForwardProtocolV1Name, proto)
		h := http.Header{}
		h.Set(v1.StreamType, v1.StreamTypeError)
		h.Set(v1.PortHeader, "8080")
		h.Set(v1.PortForwardRequestIDHeader, "0")
		errStream, err := conn.CreateStream(h)
		require.NoError(t, err)
		require.NoError(t, errStream.Close(), "the client writes nothing on the error stream")
		h.Set(v1.StreamType, v1.StreamTypeData)
		data, err := conn.CreateStream(h)
		require.NoError(t, err)
		_, err = io.WriteString(data, "ping\n")
		require.NoError(t, err)
		reply, err := bufio.NewReader(data).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "pong: ping\n", reply)
		require.NoError(t, <-served)
	})

	t.Run("node proxy", func(t *testing.T) {
		proxy := func(path string) ([]byte, error) {
			return admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", path).DoRaw(ctx)
		}
		if !proxyable {
			_, err := proxy("pods")
			require.True(t, apierrors.IsBadRequest(err), "the node proxy refuses %s: %v", ip, err)
			t.Skipf("no global unicast address on this machine: the apiserver's node proxy refuses %s (%v)", ip, err)
		}
		body, err := proxy("pods")
		require.NoError(t, err)
		var list v1.PodList
		require.NoError(t, json.Unmarshal(body, &list))
		var names []string
		for _, p := range list.Items {
			names = append(names, p.Namespace+"/"+p.Name)
		}
		require.ElementsMatch(t, []string{ns + "/logger", ns + "/shell"}, names)

		eventually(t, "stats/summary lists the pods", func() bool {
			body, err := proxy("stats/summary")
			var sum statsapi.Summary
			if err != nil || json.Unmarshal(body, &sum) != nil || sum.Node.NodeName != node {
				return false
			}
			names = names[:0]
			for _, p := range sum.Pods {
				names = append(names, p.PodRef.Namespace+"/"+p.PodRef.Name)
			}
			return len(names) == 2
		})
		require.ElementsMatch(t, []string{ns + "/logger", ns + "/shell"}, names)
		body, err = proxy("healthz")
		require.NoError(t, err)
		require.Equal(t, "ok", string(body))

		// The pod startup SLI: both pods were created, seen running on the
		// watch after their status was written, and measured.
		eventually(t, "the pod start SLI counts the two pods", func() bool {
			body, err := proxy("metrics")
			return err == nil && strings.Contains(string(body), "kubelet_pod_start_sli_duration_seconds_count 2") &&
				strings.Contains(string(body), "kubelet_pod_start_total_duration_seconds_count 2")
		})
	})

	t.Run("direct", func(t *testing.T) {
		// A ServiceAccount allowed nodes/stats, not nodes/proxy.
		const sa = "kubeletapi-stats-reader"
		user := "system:serviceaccount:" + ns + ":" + sa
		_, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: sa},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes/stats"}}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: sa},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
		require.NoError(t, err)
		// The agent caches denials: ask only once RBAC allows the grant.
		eventually(t, "RBAC grants nodes/stats", func() bool { return allowed(ctx, t, admin, user, node, "stats") })

		ca, err := os.ReadFile(srv.KubeletCAFile())
		require.NoError(t, err)
		roots := x509.NewCertPool()
		require.True(t, roots.AppendCertsFromPEM(ca))
		tr0 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
		defer tr0.CloseIdleConnections()
		hc := &http.Client{Transport: tr0, Timeout: 10 * time.Second}
		base := "https://" + net.JoinHostPort(ip, strconv.Itoa(int(port)))
		get := func(path, token string) (int, string) {
			t.Helper()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
			require.NoError(t, err)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := hc.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return resp.StatusCode, strings.TrimSpace(string(body))
		}

		code, body := get("/stats/summary", tr.Status.Token)
		require.Equal(t, http.StatusOK, code, body)
		var sum statsapi.Summary
		require.NoError(t, json.Unmarshal([]byte(body), &sum))
		require.Equal(t, node, sum.Node.NodeName)

		code, body = get("/pods", tr.Status.Token)
		require.Equal(t, http.StatusForbidden, code)
		require.Equal(t, "Forbidden (user="+user+", verb=get, resource=nodes, subresource(s)=[pods proxy])", body)
		code, body = get("/containerLogs/"+ns+"/logger/app", tr.Status.Token)
		require.Equal(t, http.StatusForbidden, code)
		require.Equal(t, "Forbidden (user="+user+", verb=get, resource=nodes, subresource(s)=[proxy])", body)

		code, body = get("/pods", "")
		require.Equal(t, http.StatusUnauthorized, code)
		require.Equal(t, "Unauthorized", body)
		code, _ = get("/pods", "not-a-token")
		require.Equal(t, http.StatusUnauthorized, code)
	})
}

// runAgentWith runs the reference agent with opts until the returned stop
// func is called.
func runAgentWith(t *testing.T, opts agent.Options) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := agent.New(ctx, opts)
	if err != nil {
		cancel()
		require.NoError(t, err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("agent did not stop")
		}
	}
}

// nodeAddress returns an IPv4 address of this machine that the apiserver's
// node proxy accepts (a global unicast one), or 127.0.0.1.
func nodeAddress() (ip string, proxyable bool) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "127.0.0.1", false
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
				if ln, err := net.Listen("tcp", net.JoinHostPort(n.IP.String(), "0")); err == nil {
					ln.Close()
					return n.IP.String(), true
				}
			}
		}
	}
	return "127.0.0.1", false
}

func hasAddress(n *v1.Node, typ v1.NodeAddressType, addr string) bool {
	for _, a := range n.Status.Addresses {
		if a.Type == typ && a.Address == addr {
			return true
		}
	}
	return false
}

// criID is the runtime's ID of a status's "<runtime>://<id>".
func criID(containerID string) string {
	_, id, ok := strings.Cut(containerID, "://")
	if !ok {
		return containerID
	}
	return id
}

// allowed asks the apiserver whether user may get nodes/<sub> of node.
func allowed(ctx context.Context, t *testing.T, cs kubernetes.Interface, user, node, sub string) bool {
	sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: sub, Name: node}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return sar.Status.Allowed
}
