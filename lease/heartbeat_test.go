package lease_test

import (
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"

	"github.com/nodekit/nodekit/lease"
	"github.com/nodekit/nodekit/lease/leasetest"
)

// TestHeartbeatRESTConfigHasItsOwnConnection: a client of the heartbeat
// config does not share the main client's HTTP/2 connection (whose stream
// limit the main client's requests could fill), and keeps its other
// settings.
func TestHeartbeatRESTConfigHasItsOwnConnection(t *testing.T) {
	defer goleak.VerifyNone(t)
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			http.Error(w, "want HTTP/2", http.StatusBadRequest)
		}
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns[c] = true
			mu.Unlock()
		}
	}
	srv.StartTLS()
	defer srv.Close()
	base := &rest.Config{Host: srv.URL, QPS: 5, Burst: 10, TLSClientConfig: rest.TLSClientConfig{
		CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}}
	hb := lease.HeartbeatRESTConfig(base, 3*time.Second)
	require.Equal(t, 3*time.Second, hb.Timeout)
	require.Equal(t, float32(-1), hb.QPS)
	require.Nil(t, base.Proxy, "base is not changed")

	var clients []*http.Client
	defer func() {
		for _, c := range clients {
			utilnet.CloseIdleConnectionsFor(c.Transport)
		}
	}()
	get := func(cfg *rest.Config) {
		t.Helper()
		c, err := rest.HTTPClientFor(cfg)
		require.NoError(t, err)
		clients = append(clients, c) // connections closed at the end, not before the next client
		resp, err := c.Get(srv.URL)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	get(base)
	get(rest.CopyConfig(base)) // the same TLS settings: client-go's shared transport
	mu.Lock()
	require.Len(t, conns, 1, "two main clients share a connection")
	mu.Unlock()
	get(hb)
	mu.Lock()
	require.Len(t, conns, 2, "the heartbeat client has a connection of its own")
	mu.Unlock()
}

// TestRenewIntervalIsTheDefaultedOne: a quarter of the lease duration
// unless set.
func TestRenewIntervalIsTheDefaultedOne(t *testing.T) {
	client := leasetest.New()
	for _, c := range []struct {
		cfg  lease.Config
		want time.Duration
	}{
		{lease.Config{Client: client, NodeName: "a"}, 10 * time.Second},
		{lease.Config{Client: client, NodeName: "a", LeaseDuration: 200 * time.Second}, 50 * time.Second},
		{lease.Config{Client: client, NodeName: "a", RenewInterval: 3 * time.Second}, 3 * time.Second},
	} {
		ctl, err := lease.New(c.cfg)
		require.NoError(t, err)
		require.Equal(t, c.want, ctl.RenewInterval())
	}
}
