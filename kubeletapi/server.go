package kubeletapi

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Server is the kubelet's HTTPS API. Build it with New and call Run once.
type Server struct {
	cfg     Config
	cert    *servingCert
	secure  http.Handler // authenticated routes
	open    http.Handler // read-only routes without authentication
	metrics *serverMetrics
	slis    *sliMetrics
	// startErr is why the process start time could not be read (Run
	// logs it), or nil.
	startErr error
}

// New validates cfg, loads the serving certificate and builds the
// authenticator and authorizer. Nothing listens until Run.
func New(cfg Config) (*Server, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	cert, err := newServingCert(&cfg)
	if err != nil {
		return nil, err
	}
	authn, authz, err := buildAuth(&cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, cert: cert}
	start, startErr := processStartTime()
	if startErr != nil {
		// component-base falls back to the time of the call.
		start, s.startErr = float64(cfg.Clock.Now().Unix()), startErr
	}
	if s.slis, err = newSLIMetrics(start); err != nil {
		return nil, err
	}
	if cfg.Registerer != nil {
		if s.metrics, err = newServerMetrics(cfg.Registerer); err != nil {
			return nil, err
		}
	}
	s.secure = withAuth(cfg.NodeName, authn, authz, s.routes(true))
	s.open = s.routes(false)
	return s, nil
}

// Handler returns the authenticated API as a handler (without TLS): for
// hosts that serve it themselves, and for tests. The client CA file is
// followed only while Run runs; without Run it is the content New read.
func (s *Server) Handler() http.Handler { return s.instrument("readwrite", s.secure) }

// routes builds the mux: every endpoint when full, else the read-only set
// (healthz, pods, stats, metrics).
func (s *Server) routes(full bool) *http.ServeMux {
	mux := http.NewServeMux()
	installHealthz(mux, s.cfg.HealthChecks, s.slis.observe)
	slis := s.slis.handler()
	mux.Handle("GET /metrics/slis", slis)
	mux.Handle("DELETE /metrics/slis", slis)
	mux.HandleFunc("GET /pods", s.pods)
	mux.HandleFunc("GET /pods/", s.pods)
	mux.HandleFunc("GET /stats/summary", s.summary)
	mux.HandleFunc("GET /metrics/resource", s.resourceMetrics)
	mux.HandleFunc("GET /metrics/cadvisor", s.cadvisorMetrics)
	if s.cfg.NodeSummary != nil {
		mux.HandleFunc("GET /stats/nodes/{node}/summary", s.nodeSummary)
		mux.HandleFunc("GET /metrics/nodes/{node}/metrics/resource", s.nodeResourceMetrics)
	}
	if s.cfg.Metrics != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.cfg.Metrics, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	}
	if s.cfg.ProbeMetrics != nil {
		mux.Handle("GET /metrics/probes", promhttp.HandlerFor(s.cfg.ProbeMetrics, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	}
	if !full {
		return mux
	}
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.containerLogs)
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		for _, p := range []string{"/{namespace}/{pod}/{container}", "/{namespace}/{pod}/{uid}/{container}"} {
			mux.HandleFunc(method+" /exec"+p, s.exec)
			mux.HandleFunc(method+" /attach"+p, s.attach)
		}
		mux.HandleFunc(method+" /portForward/{namespace}/{pod}", s.portForward)
		mux.HandleFunc(method+" /portForward/{namespace}/{pod}/{uid}", s.portForward)
	}
	if s.cfg.RunningPods != nil {
		mux.HandleFunc("GET /runningpods", s.runningPods)
		mux.HandleFunc("GET /runningpods/", s.runningPods)
	}
	mux.HandleFunc("POST /run/{namespace}/{pod}/{container}", s.run)
	mux.HandleFunc("POST /run/{namespace}/{pod}/{uid}/{container}", s.run)
	if s.cfg.Configz != nil {
		mux.HandleFunc("GET /configz", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, map[string]any{"kubeletconfig": s.cfg.Configz})
		})
	}
	if s.cfg.NodeLogDir != "" {
		mux.Handle("GET /logs/", s.nodeLogs())
	} else {
		mux.HandleFunc("/logs/", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "logs endpoint is disabled.", http.StatusMethodNotAllowed)
		})
	}
	return mux
}

// pods answers /pods with a v1 PodList of the node's pods.
func (s *Server) pods(w http.ResponseWriter, _ *http.Request) {
	list := v1.PodList{TypeMeta: metaPodList}
	for _, p := range s.cfg.Pods.GetPods() {
		list.Items = append(list.Items, *p)
	}
	writeJSON(w, &list)
}

// runningPods answers /runningpods/ with a v1 PodList of what the runtime
// runs.
func (s *Server) runningPods(w http.ResponseWriter, r *http.Request) {
	pods, err := s.cfg.RunningPods.GetRunningPods(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	list := v1.PodList{TypeMeta: metaPodList}
	for _, p := range pods {
		list.Items = append(list.Items, *p)
	}
	writeJSON(w, &list)
}

// Run serves until ctx is done, then closes every listener and open
// connection (upgraded streams included) and returns nil once all handlers
// have finished. A listener that cannot be opened is an error.
func (s *Server) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	if s.startErr != nil {
		logger.Error(s.startErr, "Could not read the process start time; process_start_time_seconds on /metrics/slis is the time New ran")
	}
	// Deferred calls run last first: cancel, then wait.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	goRun := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}

	type listener struct {
		name string
		ln   net.Listener
		h    http.Handler
		tls  bool
	}
	var lns []listener
	closeAll := func() {
		for _, l := range lns {
			_ = l.ln.Close()
		}
	}
	open := func(name string, given net.Listener, addr string, h http.Handler, tls bool) error {
		ln := given
		if ln == nil {
			if addr == "" || addr == Disabled {
				return nil
			}
			var err error
			if ln, err = net.Listen("tcp", addr); err != nil {
				return fmt.Errorf("kubeletapi: listen %s (%s): %w", addr, name, err)
			}
		}
		lns = append(lns, listener{name, ln, h, tls})
		return nil
	}
	healthz := http.NewServeMux()
	installHealthz(healthz, s.cfg.HealthChecks, s.slis.observe)
	err := errors.Join(
		open("api", s.cfg.Listener, s.cfg.Addr, s.Handler(), true),
		open("healthz", s.cfg.HealthzListener, s.cfg.HealthzAddr, healthz, false),
		open("read-only", s.cfg.ReadOnlyListener, s.cfg.ReadOnlyAddr, s.instrument("readonly", s.open), false),
	)
	if err != nil {
		closeAll()
		return err
	}

	errs := make(chan error, len(lns))
	for _, l := range lns {
		srv := s.httpServer(ctx, l.h, l.tls)
		logger.Info("Serving the kubelet API", "endpoint", l.name, "address", l.ln.Addr().String(), "tls", l.tls)
		goRun(func(ctx context.Context) {
			errs <- serve(ctx, srv, l.ln, l.tls)
		})
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-errs:
		return err
	}
}

// httpServer builds a server whose request contexts end with ctx, so that
// follows and in-process sessions stop on shutdown.
func (s *Server) httpServer(ctx context.Context, h http.Handler, useTLS bool) *http.Server {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxRequestHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		// TLS handshake and other connection errors go to the context's
		// logger (at V(2), like the kubelet's), not to the standard log.
		ErrorLog: log.New(logWriter{klog.FromContext(ctx)}, "", 0),
	}
	if useTLS {
		srv.TLSConfig = s.cert.tlsConfig()
	}
	return srv
}

// logWriter turns the lines net/http writes into log entries.
type logWriter struct{ logger klog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.logger.V(2).Info("HTTP server", "msg", strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

type connKey struct{}

// serve runs srv on ln until ctx is done or serving fails. On the way out
// it closes the listener, every connection (hijacked ones too, which
// http.Server.Close leaves open) and waits for running handlers.
func serve(ctx context.Context, srv *http.Server, ln net.Listener, useTLS bool) error {
	var (
		mu       sync.Mutex
		hijacked = map[net.Conn]struct{}{}
		handlers sync.WaitGroup
	)
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateHijacked {
			mu.Lock()
			hijacked[c] = struct{}{}
			mu.Unlock()
		}
	}
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	next := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		next.ServeHTTP(w, r)
		// An upgraded stream ends with its handler: forget its connection.
		if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
			mu.Lock()
			delete(hijacked, c)
			mu.Unlock()
		}
	})
	stopped := make(chan struct{})
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		select {
		case <-ctx.Done():
		case <-stopped:
		}
		_ = srv.Close()
		mu.Lock()
		for c := range hijacked {
			_ = c.Close()
		}
		mu.Unlock()
	}()
	var err error
	if useTLS {
		err = srv.ServeTLS(ln, "", "")
	} else {
		err = srv.Serve(ln)
	}
	close(stopped)
	<-closed
	handlers.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
