// Package kubeclient is the part of the Kubernetes API that nodekit's
// node-path blocks (lease, nodestatus, podstatus, kubeletapi, virtualnode)
// call, as small interfaces, and a client that implements exactly that.
//
// The interfaces are subsets of client-go's typed clients, method for
// method, so any client-go client fits them through package
// kubeclient/clientset:
//
//	client := clientset.Wrap(kubernetes.NewForConfigOrDie(restConfig))
//
// Why not client-go's typed clients themselves: importing any of them
// (even the core/v1 one alone) links client-go's scheme of every API group
// and their generated code. examples/virtualnodes, started with 1,000
// nodes, had 24.5 MiB of its executable resident and 14.0 MiB anonymous
// with client-go's clientset, 18.7 and 11.5 with this client (and a 30 MB
// executable instead of 44). NewForConfig builds a client for the
// resources listed here only (core/v1 pods and nodes,
// coordination.k8s.io/v1 leases, authentication.k8s.io/v1 token reviews,
// authorization.k8s.io/v1 subject access reviews) with client-go's own REST
// machinery (rest, gentype), so a host that uses nothing else of
// client-go's clientset, such as an agent running thousands of virtual
// nodes, does not pay for it.
//
// Fakes: clientset.Wrap(fake.NewClientset()) in tests.
package kubeclient
