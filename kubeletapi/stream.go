package kubeletapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/klog/v2"
)

// StatusError is an error with the HTTP status a handler answers it with.
// A Streamer, Runner or LogSource may return one (for example 404 for a
// container that is not running).
type StatusError struct {
	Code int
	Err  error
}

func (e *StatusError) Error() string { return e.Err.Error() }
func (e *StatusError) Unwrap() error { return e.Err }

// NotFound returns a 404 StatusError with the message.
func NotFound(format string, args ...any) error {
	return &StatusError{Code: http.StatusNotFound, Err: fmt.Errorf(format, args...)}
}

func writeError(w http.ResponseWriter, err error, fallback int) {
	code := fallback
	var se *StatusError
	if errors.As(err, &se) {
		code = se.Code
	}
	http.Error(w, err.Error(), code)
}

// streamTarget resolves the pod of a streaming request, checking the
// optional {uid} segment.
func (s *Server) streamTarget(w http.ResponseWriter, r *http.Request) (*v1.Pod, bool) {
	pod, ok := s.cfg.Pods.GetPodByName(r.PathValue("namespace"), r.PathValue("pod"))
	if !ok {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return nil, false
	}
	if uid := types.UID(r.PathValue("uid")); uid != "" && uid != pod.UID {
		http.Error(w, "pod not found", http.StatusNotFound)
		return nil, false
	}
	return pod, true
}

func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	s.remoteCommand(w, r, "exec", func(pod *v1.Pod, opts StreamOptions) (http.Handler, error) {
		return s.cfg.Streaming.Exec(r.Context(), pod, r.PathValue("container"), r.URL.Query()["command"], opts)
	})
}

func (s *Server) attach(w http.ResponseWriter, r *http.Request) {
	s.remoteCommand(w, r, "attach", func(pod *v1.Pod, opts StreamOptions) (http.Handler, error) {
		return s.cfg.Streaming.Attach(r.Context(), pod, r.PathValue("container"), opts)
	})
}

// remoteCommand is the common path of exec and attach: stream options,
// pod, then the Streamer's handler serves the upgrade.
func (s *Server) remoteCommand(w http.ResponseWriter, r *http.Request, what string, open func(*v1.Pod, StreamOptions) (http.Handler, error)) {
	if s.cfg.Streaming == nil {
		http.Error(w, what+" is not supported by this node", http.StatusNotImplemented)
		return
	}
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.serveStream(w, r, func(pod *v1.Pod) (http.Handler, error) { return open(pod, *opts) })
}

func (s *Server) portForward(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Streaming == nil {
		http.Error(w, "port forwarding is not supported by this node", http.StatusNotImplemented)
		return
	}
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.serveStream(w, r, func(pod *v1.Pod) (http.Handler, error) {
		return s.cfg.Streaming.PortForward(r.Context(), pod, opts.Ports)
	})
}

// serveStream resolves the request's pod and serves the handler open
// returns for it.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, open func(*v1.Pod) (http.Handler, error)) {
	pod, ok := s.streamTarget(w, r)
	if !ok {
		return
	}
	h, err := open(pod)
	if err != nil {
		writeError(w, err, http.StatusInternalServerError)
		return
	}
	h.ServeHTTP(w, r)
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Runner == nil {
		http.Error(w, "run is not supported by this node", http.StatusNotImplemented)
		return
	}
	pod, ok := s.streamTarget(w, r)
	if !ok {
		return
	}
	// For legacy reasons /run takes one space-separated "cmd".
	cmd := strings.Split(r.URL.Query().Get("cmd"), " ")
	out, err := s.cfg.Runner.RunInContainer(r.Context(), pod, r.PathValue("container"), cmd)
	if err != nil {
		writeError(w, err, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// ProxyStream returns the handler that proxies an upgraded exec, attach or
// port-forward connection to a runtime's streaming URL (what CRI Exec,
// Attach and PortForward return), as the kubelet does.
func ProxyStream(u *url.URL) http.Handler {
	return proxy.NewUpgradeAwareHandler(u, nil, false, true, proxyResponder{})
}

type proxyResponder struct{}

func (proxyResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	klog.FromContext(r.Context()).Error(err, "Error while proxying a stream")
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

// writeJSON encodes v as the response.
func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
