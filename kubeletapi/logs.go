package kubeletapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// maxQueryValueLen bounds each query value; a longer one is malformed.
const maxQueryValueLen = 256

// ParseLogOptions decodes the query of a /containerLogs request into
// PodLogOptions the way the kubelet does (the legacy "tail" parameter
// included, "tail=all" meaning no limit). A malformed value is an error
// (answered 400); an invalid combination fails ValidateLogOptions (422).
func ParseLogOptions(q url.Values) (*v1.PodLogOptions, error) {
	if tail := q.Get("tail"); tail != "" {
		q = cloneValues(q)
		if tail == "all" {
			q.Del("tailLines")
		} else {
			q.Set("tailLines", tail)
		}
	}
	opts := &v1.PodLogOptions{}
	var errs []error
	for key, vals := range q {
		if len(vals) == 0 {
			continue
		}
		v := vals[0]
		if len(v) > maxQueryValueLen {
			errs = append(errs, fmt.Errorf("%s: value too long", key))
			continue
		}
		var err error
		switch key {
		case "container":
			opts.Container = v
		case "follow":
			opts.Follow, err = parseBool(v)
		case "previous":
			opts.Previous, err = parseBool(v)
		case "timestamps":
			opts.Timestamps, err = parseBool(v)
		case "insecureSkipTLSVerifyBackend":
			opts.InsecureSkipTLSVerifyBackend, err = parseBool(v)
		case "sinceSeconds":
			opts.SinceSeconds, err = parseInt64(v)
		case "tailLines":
			opts.TailLines, err = parseInt64(v)
		case "limitBytes":
			opts.LimitBytes, err = parseInt64(v)
		case "sinceTime":
			var t time.Time
			if t, err = time.Parse(time.RFC3339, v); err == nil {
				mt := metav1.NewTime(t)
				opts.SinceTime = &mt
			}
		case "stream":
			opts.Stream = &v
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return opts, nil
}

func cloneValues(q url.Values) url.Values {
	out := make(url.Values, len(q))
	for k, v := range q {
		out[k] = v
	}
	return out
}

// parseBool accepts what the API's query conversion accepts: an empty
// value means true.
func parseBool(v string) (bool, error) {
	if v == "" {
		return true, nil
	}
	return strconv.ParseBool(v)
}

func parseInt64(v string) (*int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// ValidateLogOptions applies the API's PodLogOptions validation.
func ValidateLogOptions(o *v1.PodLogOptions) error {
	var errs []error
	if o.TailLines != nil && *o.TailLines < 0 {
		errs = append(errs, errors.New("tailLines: must be greater than or equal to 0"))
	}
	if o.LimitBytes != nil && *o.LimitBytes < 1 {
		errs = append(errs, errors.New("limitBytes: must be greater than 0"))
	}
	if o.SinceSeconds != nil {
		if *o.SinceSeconds < 1 {
			errs = append(errs, errors.New("sinceSeconds: must be greater than 0"))
		}
		if o.SinceTime != nil {
			errs = append(errs, errors.New("sinceSeconds and sinceTime: at most one may be specified"))
		}
	}
	if o.Stream != nil {
		switch *o.Stream {
		case v1.LogStreamAll, v1.LogStreamStdout, v1.LogStreamStderr:
		default:
			errs = append(errs, fmt.Errorf("stream: unsupported value %q", *o.Stream))
		}
		if *o.Stream != v1.LogStreamAll && o.TailLines != nil {
			errs = append(errs, errors.New("tailLines and a specific stream are mutually exclusive"))
		}
	}
	return errors.Join(errs...)
}

// hasContainer reports whether the pod's spec names the container
// (regular, init or ephemeral).
func hasContainer(pod *v1.Pod, name string) bool {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return true
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return true
		}
	}
	return false
}

func (s *Server) containerLogs(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Logs == nil {
		http.Error(w, "container logs are not supported by this node", http.StatusNotImplemented)
		return
	}
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	opts, err := ParseLogOptions(r.URL.Query())
	if err != nil {
		http.Error(w, `{"message": "Unable to decode query."}`, http.StatusBadRequest)
		return
	}
	if err := ValidateLogOptions(opts); err != nil {
		http.Error(w, `{"message": "Invalid request."}`, http.StatusUnprocessableEntity)
		return
	}
	pod, ok := s.cfg.Pods.GetPodByName(ns, name)
	if !ok {
		http.Error(w, fmt.Sprintf("pod %q does not exist", name), http.StatusNotFound)
		return
	}
	if !hasContainer(pod, container) {
		http.Error(w, fmt.Sprintf("container %q not found in pod %q", container, name), http.StatusNotFound)
		return
	}
	fw := &flushWriter{w: w}
	if f, ok := w.(http.Flusher); ok {
		fw.f = f
	}
	var stdout, stderr io.Writer = fw, fw
	if opts.Stream != nil {
		switch *opts.Stream {
		case v1.LogStreamStdout:
			stderr = nil
		case v1.LogStreamStderr:
			stdout = nil
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	if err := s.cfg.Logs.ContainerLogs(r.Context(), pod, container, opts, stdout, stderr); err != nil {
		if fw.wrote() {
			// The status line is gone; the client sees a truncated stream.
			klog.FromContext(r.Context()).V(2).Info("Container log stream ended with an error", "pod", klog.KObj(pod), "container", container, "err", err)
			return
		}
		http.Error(w, err.Error(), http.StatusBadRequest)
	}
}

// flushWriter flushes after every write, so a follower sees each line as
// it is read; an empty write sends the headers (a LogSource does one once
// it knows the log exists, as the kubelet does, so that a quiet follow is
// not mistaken for a hung server). It is safe for two streams to share it.
type flushWriter struct {
	mu      sync.Mutex
	w       io.Writer
	f       http.Flusher
	written bool
}

func (fw *flushWriter) Write(p []byte) (int, error) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	n, err := fw.w.Write(p)
	fw.written = true // even an empty write commits the 200
	if fw.f != nil {
		fw.f.Flush()
	}
	return n, err
}

func (fw *flushWriter) wrote() bool {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return fw.written
}
