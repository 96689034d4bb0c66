// Package apiserver is nodekit's test harness for a real kube-apiserver.
//
// It starts an embedded etcd and an in-process kube-apiserver (the one from
// k8s.io/kubernetes, with --authorization-mode=Node,RBAC and the
// NodeRestriction admission plugin) on 127.0.0.1, once per test binary, and
// hands out clients: an admin client, and node-identity clients that act as
// user system:node:<name> in group system:nodes, so the Node authorizer and
// NodeRestriction really judge what a node agent does.
//
// Use it from TestMain:
//
//	var srv *apiserver.Server
//
//	func TestMain(m *testing.M) { apiserver.Main(m, &srv) }
//
// The apiserver reaches kubelets the way kubeadm sets it up: with a client
// certificate (kube-apiserver-kubelet-client in system:masters) and
// preferring a node's InternalIP, verifying the kubelet's serving
// certificate. One CA signs both: give KubeletCAFile to a kubelet API as
// its client CA, and serve it with a certificate from KubeletServingCert.
//
// The apiserver and etcd log thousands of lines; the harness keeps the most
// recent output in memory and prints it only when a test fails (or when
// NODEKIT_APISERVER_LOGS=1).
package apiserver
