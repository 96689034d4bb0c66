package lease

import (
	"context"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/nodekit/nodekit/kubeclient"
)

// HeartbeatRESTConfig returns a copy of base for a dedicated heartbeat
// client, the way the kubelet builds one: requests time out after timeout
// (use the renew interval, 10s by default, so a hung connection cannot
// swallow a lease's grace period) and client-side rate limiting is off, so
// heartbeats never queue behind the main client's traffic. The copy also
// gets a connection of its own: client-go shares one transport, and so one
// HTTP/2 connection, among configs with the same TLS settings, and a
// connection carries at most the server's stream limit of requests at once
// (250 with Go's server); an agent with that many pod requests in flight
// would otherwise make its renewals wait for a free stream. (A config with
// a Proxy function gets a transport of its own; base's Proxy, or the
// environment's proxy settings as before, is kept.)
func HeartbeatRESTConfig(base *rest.Config, timeout time.Duration) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.Timeout = timeout
	cfg.QPS = -1
	cfg.RateLimiter = nil
	if cfg.Proxy == nil && cfg.Transport == nil {
		cfg.Proxy = http.ProxyFromEnvironment
	}
	return cfg
}

// NodeUIDFromAPI returns a NodeUIDFunc that GETs the Node from the API
// server. The controller calls it only while the UID is unknown; hosts with a
// Node informer should read its lister instead.
func NodeUIDFromAPI(nodes kubeclient.NodesGetter) NodeUIDFunc {
	return func(ctx context.Context, name string) (types.UID, error) {
		n, err := nodes.Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return n.UID, nil
	}
}
