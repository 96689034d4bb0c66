package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Counters is what a proxy has counted since it started. The API side
// counts requests by "VERB resource" and the bytes on the agent's TLS
// connections (sent: agent → API server, received: the other way); the CRI
// side counts calls by method.
type Counters struct {
	APIRequests      int64            `json:"apiRequests"`
	APIBytesSent     int64            `json:"apiBytesSent"`
	APIBytesReceived int64            `json:"apiBytesReceived"`
	APIByKind        map[string]int64 `json:"apiByKind"`
	CRICalls         int64            `json:"criCalls"`
	CRIByMethod      map[string]int64 `json:"criByMethod"`
	// CRINanosByMethod is the time the calls took, from the proxy's
	// receipt to the runtime's answer (streams: their lifetime).
	CRINanosByMethod map[string]int64 `json:"criNanosByMethod"`
}

// Sub returns c − base, key by key.
func (c Counters) Sub(base Counters) Counters {
	sub := func(a, b map[string]int64) map[string]int64 {
		out := map[string]int64{}
		for k, v := range a {
			if d := v - b[k]; d != 0 {
				out[k] = d
			}
		}
		return out
	}
	return Counters{
		APIRequests:      c.APIRequests - base.APIRequests,
		APIBytesSent:     c.APIBytesSent - base.APIBytesSent,
		APIBytesReceived: c.APIBytesReceived - base.APIBytesReceived,
		APIByKind:        sub(c.APIByKind, base.APIByKind),
		CRICalls:         c.CRICalls - base.CRICalls,
		CRIByMethod:      sub(c.CRIByMethod, base.CRIByMethod),
		CRINanosByMethod: sub(c.CRINanosByMethod, base.CRINanosByMethod),
	}
}

// counter is a Counters under a lock plus the byte counts, kept atomically
// by the connections.
type counter struct {
	mu          sync.Mutex
	api, cri    map[string]int64
	criNanos    map[string]int64
	sent, recvd atomic.Int64
	apiN, criN  atomic.Int64
}

func newCounter() *counter {
	return &counter{api: map[string]int64{}, cri: map[string]int64{}, criNanos: map[string]int64{}}
}

func (c *counter) addAPI(kind string) {
	c.apiN.Add(1)
	c.mu.Lock()
	c.api[kind]++
	c.mu.Unlock()
}

func (c *counter) addCRI(method string) {
	c.criN.Add(1)
	c.mu.Lock()
	c.cri[method]++
	c.mu.Unlock()
}

func (c *counter) addCRITime(method string, d time.Duration) {
	c.mu.Lock()
	c.criNanos[method] += int64(d)
	c.mu.Unlock()
}

func (c *counter) snapshot() Counters {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := func(m map[string]int64) map[string]int64 {
		out := make(map[string]int64, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	return Counters{
		APIRequests: c.apiN.Load(), APIBytesSent: c.sent.Load(), APIBytesReceived: c.recvd.Load(), APIByKind: cp(c.api),
		CRICalls: c.criN.Load(), CRIByMethod: cp(c.cri), CRINanosByMethod: cp(c.criNanos),
	}
}

// countingConn counts the bytes of one accepted connection.
type countingConn struct {
	net.Conn
	c *counter
}

func (cc countingConn) Read(p []byte) (int, error) {
	n, err := cc.Conn.Read(p)
	cc.c.sent.Add(int64(n))
	return n, err
}

func (cc countingConn) Write(p []byte) (int, error) {
	n, err := cc.Conn.Write(p)
	cc.c.recvd.Add(int64(n))
	return n, err
}

type countingListener struct {
	net.Listener
	c *counter
}

func (l countingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: conn, c: l.c}, nil
}

// apiProxy forwards HTTPS requests to the API server with the credentials of
// upstreamKubeconfig, read at the first request (the file may not exist yet
// when the proxy starts: the cluster's PKI is made by its up script).
type apiProxy struct {
	upstreamKubeconfig string
	c                  *counter
	once               sync.Once
	proxy              *httputil.ReverseProxy
	err                error
}

func (p *apiProxy) init() {
	cfg, err := clientcmd.BuildConfigFromFlags("", p.upstreamKubeconfig)
	if err != nil {
		p.err = err
		return
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		p.err = err
		return
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		p.err = err
		return
	}
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     rt,
		FlushInterval: -1, // watches stream
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if !errors.Is(err, context.Canceled) { // a client that went away
				log.Printf("proxy: %s %s: %v", r.Method, r.URL.Path, err)
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
}

func (p *apiProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.once.Do(p.init)
	if p.err != nil {
		http.Error(w, p.err.Error(), http.StatusBadGateway)
		return
	}
	p.c.addAPI(requestKind(r))
	p.proxy.ServeHTTP(w, r)
}

// requestKind names a request "VERB resource[/subresource]" as the API
// server's audit would: GET of a collection is list, ?watch=true watch.
func requestKind(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// /api/v1/... or /apis/group/version/...
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return r.Method + " " + r.URL.Path
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	resource, named := "", false
	switch len(parts) {
	case 0:
	case 1:
		resource = parts[0]
	case 2:
		resource, named = parts[0], true
	default:
		resource, named = parts[0]+"/"+parts[2], true
	}
	verb := strings.ToLower(r.Method)
	switch {
	case r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true":
		verb = "watch"
	case r.Method == http.MethodGet && !named:
		verb = "list"
	case r.Method == http.MethodGet:
		verb = "get"
	case r.Method == http.MethodPost:
		verb = "create"
	case r.Method == http.MethodPut:
		verb = "update"
	}
	return verb + " " + resource
}

// selfSigned makes a serving certificate for 127.0.0.1 and returns it with
// its PEM (the CA a client must trust).
func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "benchcluster-proxy"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(7 * 24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, certPEM, nil
}

// writeKubeconfig writes a kubeconfig for server trusting caPEM, with no
// credentials (the proxy presents the upstream identity).
func writeKubeconfig(path, server string, caPEM []byte) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	return clientcmd.WriteToFile(*cfg, path)
}

// rawCodec passes gRPC messages through as bytes.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("rawCodec: %T", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// criProxy forwards every gRPC call on a unix socket to upstream, counting
// calls by method. Streams (GetContainerEvents) are forwarded both ways.
func criProxy(ctx context.Context, listen, upstream string, c *counter) (stop func(), err error) {
	conn, err := grpc.NewClient("unix://"+strings.TrimPrefix(upstream, "unix://"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		return nil, err
	}
	_ = os.Remove(listen)
	l, err := net.Listen("unix", listen)
	if err != nil {
		return nil, err
	}
	handler := func(_ any, ss grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(ss)
		name := method[strings.LastIndex(method, "/")+1:]
		c.addCRI(name)
		start := time.Now()
		defer func() { c.addCRITime(name, time.Since(start)) }()
		sctx := ss.Context()
		if md, ok := metadata.FromIncomingContext(sctx); ok {
			sctx = metadata.NewOutgoingContext(sctx, md.Copy())
		}
		cs, err := conn.NewStream(sctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, grpc.ForceCodec(rawCodec{}))
		if err != nil {
			return err
		}
		upErr := make(chan error, 1)
		go func() {
			for {
				var b []byte
				if err := ss.RecvMsg(&b); err != nil {
					if errors.Is(err, io.EOF) {
						upErr <- cs.CloseSend()
					} else {
						upErr <- err
					}
					return
				}
				if err := cs.SendMsg(&b); err != nil {
					upErr <- nil // the receive side reports the stream's error
					return
				}
			}
		}()
		if md, err := cs.Header(); err == nil {
			if err := ss.SendHeader(md); err != nil {
				return err
			}
		}
		for {
			var b []byte
			if err := cs.RecvMsg(&b); err != nil {
				ss.SetTrailer(cs.Trailer())
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			if err := ss.SendMsg(&b); err != nil {
				return err
			}
		}
	}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(handler), grpc.ForceServerCodec(rawCodec{}),
		grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20))
	go func() { _ = srv.Serve(l) }()
	return func() {
		srv.Stop()
		_ = conn.Close()
	}, nil
}

// proxies is the API and CRI proxies of one agent under measurement and the
// HTTP endpoint that reports their counters.
type proxies struct {
	c        *counter
	stops    []func()
	apiAddr  string
	caPEM    []byte
	statsURL string
}

// startProxies starts the API proxy on apiListen (forwarding with the
// credentials of upstreamKubeconfig) and, if criListen is set, the CRI proxy
// to criUpstream; statsListen serves GET /stats.
func startProxies(ctx context.Context, apiListen, upstreamKubeconfig, criListen, criUpstream, statsListen string) (*proxies, error) {
	p := &proxies{c: newCounter()}
	cert, caPEM, err := selfSigned()
	if err != nil {
		return nil, err
	}
	p.caPEM = caPEM
	l, err := net.Listen("tcp", apiListen)
	if err != nil {
		return nil, err
	}
	p.apiAddr = l.Addr().String()
	api := &http.Server{
		Handler:   &apiProxy{upstreamKubeconfig: upstreamKubeconfig, c: p.c},
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}},
	}
	go func() { _ = api.ServeTLS(countingListener{Listener: l, c: p.c}, "", "") }()
	p.stops = append(p.stops, func() { _ = api.Close() })
	if criListen != "" {
		stop, err := criProxy(ctx, criListen, criUpstream, p.c)
		if err != nil {
			p.stop()
			return nil, err
		}
		p.stops = append(p.stops, stop)
	}
	if statsListen != "" {
		sl, err := net.Listen("tcp", statsListen)
		if err != nil {
			p.stop()
			return nil, err
		}
		p.statsURL = "http://" + sl.Addr().String() + "/stats"
		stats := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(p.c.snapshot())
		})}
		go func() { _ = stats.Serve(sl) }()
		p.stops = append(p.stops, func() { _ = stats.Close() })
	}
	return p, nil
}

func (p *proxies) stop() {
	for _, s := range p.stops {
		s()
	}
}

// fetchCounters reads a proxy's counters from its stats URL.
func fetchCounters(ctx context.Context, statsURL string) (Counters, error) {
	var c Counters
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, statsURL, nil)
	if err != nil {
		return c, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return c, err
	}
	defer resp.Body.Close()
	return c, json.NewDecoder(resp.Body).Decode(&c)
}
