// Package nodecerts gives a node agent its certificates the way the kubelet
// gets them: TLS bootstrapping of the client certificate from a bootstrap
// kubeconfig, rotation of that certificate before it expires, and a kubelet
// API serving certificate requested from the cluster
// (kubernetes.io/kubelet-serving) instead of a file or a self-signed one.
//
// # Model
//
// A Client owns the node's API credentials. NewClient reads the kubeconfig
// and, when its certificate is missing or expired and a bootstrap
// kubeconfig is given, writes a new kubeconfig that points at the
// certificate store in CertDir (kubelet-client-current.pem), as the
// kubelet's --bootstrap-kubeconfig does. RESTConfig is the configuration
// every API client of the node is built from: its transport presents the
// store's current certificate at each new connection. Run drives client-go's
// certificate manager (k8s.io/client-go/util/certificate): with no
// certificate it requests one at once with the bootstrap credentials
// (a kubernetes.io/kube-apiserver-client-kubelet CSR for
// system:node:NAME in system:nodes), with one it requests the next at
// 70-90% of its lifetime with the node's own identity. When the
// certificate changes, Run closes the open API connections, so that the
// next request reconnects with it; Ready is closed at the first valid one.
// When the kubeconfig names a CA file, servers are verified against the
// file's current content, which Run re-reads every 10 seconds (closing the
// connections when it changes): a rotated cluster CA is followed without
// a restart. CA data embedded in a kubeconfig is fixed for the process.
//
// A Serving owns the kubelet API's serving certificate. Its Template names
// the node's current addresses; Run requests a certificate as soon as the
// node has an IP address, again when the addresses change and before the
// certificate expires. GetCertificate plugs into a tls.Config (kubeletapi's
// Config.GetCertificate): until a certificate is issued every handshake
// fails with ErrNoServingCertificate, so the API serves nothing.
//
// What is trusted: a certificate signing request is the node's only if
// this process created it. Any node and any bootstrap token holder may
// create a request whose subject is system:node:NAME with names of their
// choosing, so the subject proves nothing. Client and Serving hand
// client-go's certificate manager a clientset that remembers each request
// it creates as the API server answered it; a pending request is named
// (in the log, the hint "kubectl certificate approve NAME", and Serving's
// event) and a denied one ends Client.Run only when the API server's
// request is that one: the same name and UID, the same signer, the same
// PEM request (so the public key of the private key the manager generated
// and holds), and the same spec.username. The username expected is the
// node's (system:node:NAME) for a request made with the node's own
// credentials (a client certificate's rotation, every serving request);
// for one made with the bootstrap credentials it is whoever the API server
// recorded when it answered the create (the token's system:bootstrap:ID,
// or whoever the kubeconfig names when it requests for itself), as there
// is no fixed user to expect. A certificate is only ever taken from the
// manager, which waits on its own request by name and UID and stores the
// certificate only if it matches its private key: a request of anyone
// else is never named, never used, and never ends the agent.
//
// # Host duties
//
//  1. Build a Client, build every API client from RESTConfig, and run
//     Client.Run for the agent's life; wait for Ready before the work that
//     needs the node's identity (registration, the node claim).
//  2. For serverTLSBootstrap, build a Serving with the node's client and its
//     addresses (the node status's), pass GetCertificate to the HTTPS
//     server, and run Serving.Run.
//  3. Approve requests. The kube-controller-manager's csrapproving
//     controller approves client requests of the bootstrap token groups and
//     of nodes renewing their own; serving requests are left to the
//     cluster's operator or an approver of its choosing (kubectl
//     certificate approve NAME), as upstream: check that a serving
//     request's spec.username is the node it names. Run logs the pending
//     request it made by name, and Serving also records a Warning event
//     on the Node.
//  4. Restart the agent when Client.Run returns: ErrDenied (the request was
//     denied) and ErrNoCertificate (no valid certificate and no working API
//     connection for ExitAfter) both end in a fresh bootstrap.
//
// # Metrics
//
// With ClientConfig.Registerer (a Client that rotates or bootstraps) and
// ServingConfig.Registerer set, the kubelet's certificate manager
// families are registered under upstream's names, help and buckets:
// kubelet_certificate_manager_client_ttl_seconds and
// kubelet_certificate_manager_client_expiration_renew_errors for the
// client certificate; kubelet_certificate_manager_server_ttl_seconds,
// kubelet_server_expiration_renew_errors and
// kubelet_certificate_manager_server_rotation_seconds for the serving
// certificate. The TTL gauges are computed from the current certificate
// when scraped (+Inf without one); the counter and histogram are
// client-go's certificate manager's hooks (a failed request, a replaced
// certificate's age). A registry that has them already is refused.
//
// # Differences from upstream
//
//   - The first client certificate is always requested by the certificate
//     manager, with or without Rotate; without Rotate the manager stops once
//     it is issued (the kubelet uses a separate blocking bootstrap then).
//     The agent therefore starts at once and waits on Ready, instead of
//     blocking its start-up.
//   - Run's own checks (connection reset, reporting, ExitAfter) run on the
//     injected clock; the rotation schedule and its back-off are client-go's
//     certificate manager's, on real time, because the manager takes no
//     clock.
//   - A denied client request ends Run with ErrDenied once it is the newest
//     request of this run; the kubelet only logs the manager's retries when
//     rotating. Requests are reported (named, their denial an error) only
//     when they are the ones this run created, checked as above; the
//     kubelet reports none. A request created through the v1beta1 API
//     (a server without certificates.k8s.io/v1) is not reported.
//   - The kubeconfig written by bootstrapping also carries the bootstrap
//     kubeconfig's TLS server name.
//   - The TTL gauges count down on the injected clock (upstream:
//     time.Until); the rotation histogram is client-go's, on real time.
package nodecerts
