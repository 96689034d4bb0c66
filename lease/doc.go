// Package lease keeps node Leases (coordination.k8s.io/v1, namespace
// kube-node-lease) renewed: the heartbeat by which the control plane knows a
// node agent is alive. A node whose lease is not renewed within the node
// monitor grace period (50s) turns Unknown and is tainted unreachable.
//
// # Model
//
// A Controller manages one or many node names. Each name has a schedule
// entry; Run keeps a single clock timer for the earliest entry and hands due
// entries to a bounded pool of workers, so 10,000 names cost 10,000 small
// records, not 10,000 goroutines and tickers. Renew is the synchronous
// one-pass core Run is built on; tests and hosts may call it directly.
//
// One renewal:
//
//  1. Happy path: a single UPDATE built from the last lease the controller
//     wrote (no GET), with renewTime from the injected clock.
//  2. Conflict or NotFound: GET the lease, CREATE it if it is gone, and
//     update again, up to MaxUpdateAttempts writes.
//  3. Any other error ends the renewal. The next attempt is scheduled after
//     an exponential backoff (200ms doubling to 7s); OnRepeatedFailure runs
//     from the second consecutive failure on. A success schedules the next
//     renewal a RenewInterval (¼ of the duration, 10s) later, stretched by
//     up to 4% jitter.
//
// Every period, backoff and request timeout runs on Config.Clock, so a test
// with a FakeClock can step through all of them.
//
// # Host duties
//
//  1. Build a heartbeat client (HeartbeatRESTConfig; kubeclient.NewForConfig
//     or a client-go clientset wrapped by kubeclient/clientset.Wrap) and
//     pass it as Config.Client.
//  2. Tell the controller the Node's UID for the owner reference: call
//     SetNodeUID after registering the Node, or set Config.NodeUID (for
//     example NodeUIDFromAPI, or a lister lookup).
//  3. Run it: go ctl.Run(ctx). Add and Remove names at run time for
//     virtual nodes.
//
// # Differences from upstream (k8s.io/component-helpers/apimachinery/lease)
//
//   - All timing, including backoff sleeps and request timeouts, uses the
//     injected clock; upstream sleeps on real time.
//   - A failing server is retried after the backoff instead of with five
//     immediate updates, and the lease is never left un-retried: upstream
//     blocks its loop inside an unbounded ensure-lease backoff.
//   - The Node is not fetched while building each lease: its UID is pushed
//     by the host or looked up at most once per OwnerLookupInterval until
//     found. A missing Node never stops renewals; the lease carries no owner
//     reference until the Node exists. If a lease looked-up as owned
//     disappears (the Node was recreated and the garbage collector removed
//     it), the UID is looked up again before the lease is recreated.
//   - Managed fields are dropped from the cached lease, so updates are
//     smaller than the objects the server returns.
//   - A lease held by another identity is taken over (holderIdentity is set
//     to ours, with a log line): a node's lease belongs to that node, and an
//     agent that stopped renewing would otherwise keep it forever. Upstream
//     keeps renewing it under the other holder's name.
//   - The lease is not deleted on start or stop; it expires on its own.
//   - Many names per controller, with InitialSpread to stagger them, and
//     BatchWindow to renew the leases due close together in one wake-up
//     (early, never late): one timer wake-up and a burst of back-to-back
//     requests per window instead of one per lease, which is most of what
//     a renewal costs a process renewing hundreds a second (see
//     docs/benchmarks.md).
package lease
