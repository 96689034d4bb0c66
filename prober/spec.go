package prober

import (
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Upstream API defaults for the fields of a v1.Probe left at zero.
const (
	defaultPeriodSeconds    = 10
	defaultTimeoutSeconds   = 1
	defaultSuccessThreshold = 1
	defaultFailureThreshold = 3
)

type handlerKind int

const (
	kindExec handlerKind = iota
	kindHTTP
	kindTCP
	kindGRPC
)

// probeSpec is a v1.Probe validated, defaulted and compiled once, when its
// pod is added, so that each run does no parsing.
type probeSpec struct {
	initialDelay int32 // seconds, compared like upstream
	period       time.Duration
	timeout      time.Duration
	success      int
	failure      int
	kind         handlerKind

	cmd     []string    // exec, with static env references expanded
	host    string      // http, tcp: explicit host; "" means the pod IP
	port    int         // http, tcp, grpc
	http    *httpTarget // http
	service string      // grpc
}

// compileProbe validates p for a probe of type t in container c. Zero
// period, timeout and thresholds get the API defaults.
func compileProbe(t ProbeType, p *v1.Probe, c *v1.Container) (probeSpec, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}
	s := probeSpec{
		initialDelay: p.InitialDelaySeconds,
		period:       time.Duration(orDefault(p.PeriodSeconds, defaultPeriodSeconds)) * time.Second,
		timeout:      time.Duration(orDefault(p.TimeoutSeconds, defaultTimeoutSeconds)) * time.Second,
		success:      int(orDefault(p.SuccessThreshold, defaultSuccessThreshold)),
		failure:      int(orDefault(p.FailureThreshold, defaultFailureThreshold)),
	}
	for _, f := range []struct {
		name string
		v    int32
	}{{"initialDelaySeconds", p.InitialDelaySeconds}, {"periodSeconds", p.PeriodSeconds},
		{"timeoutSeconds", p.TimeoutSeconds}, {"successThreshold", p.SuccessThreshold},
		{"failureThreshold", p.FailureThreshold}} {
		if f.v < 0 {
			bad("%s must not be negative, got %d", f.name, f.v)
		}
	}
	if t != Readiness && s.success != 1 {
		bad("successThreshold must be 1 for %s probes, got %d", strings.ToLower(t.String()), s.success)
	}
	if g := p.TerminationGracePeriodSeconds; g != nil && (*g <= 0 || t == Readiness) {
		bad("terminationGracePeriodSeconds %d is not allowed on a %s probe", *g, strings.ToLower(t.String()))
	}

	n := 0
	if p.Exec != nil {
		n++
		s.kind = kindExec
		if len(p.Exec.Command) == 0 {
			bad("exec command is empty")
		}
		s.cmd = expandCommand(p.Exec.Command, c.Env)
	}
	if p.HTTPGet != nil {
		n++
		s.kind = kindHTTP
		s.host = p.HTTPGet.Host
		port, err := resolvePort(p.HTTPGet.Port, c)
		if err != nil {
			errs = append(errs, err)
		}
		s.port = port
		ht, err := compileHTTP(p.HTTPGet)
		if err != nil {
			errs = append(errs, err)
		}
		s.http = ht
	}
	if p.TCPSocket != nil {
		n++
		s.kind = kindTCP
		s.host = p.TCPSocket.Host
		port, err := resolvePort(p.TCPSocket.Port, c)
		if err != nil {
			errs = append(errs, err)
		}
		s.port = port
	}
	if p.GRPC != nil {
		n++
		s.kind = kindGRPC
		s.port = int(p.GRPC.Port)
		if s.port <= 0 || s.port > 65535 {
			bad("invalid port number: %d", p.GRPC.Port)
		}
		if p.GRPC.Service != nil {
			s.service = *p.GRPC.Service
		}
	}
	switch {
	case n == 0:
		bad("missing probe handler")
	case n > 1:
		bad("%d probe handlers set, want exactly one", n)
	}
	if len(errs) > 0 {
		return s, fmt.Errorf("%w: %s probe of container %q: %w", ErrInvalidProbe, t, c.Name, errors.Join(errs...))
	}
	return s, nil
}

func orDefault(v, def int32) int32 {
	if v == 0 {
		return def
	}
	return v
}

// resolvePort turns a probe's port (a number or the name of one of the
// container's ports) into a port number, like upstream's
// probe.ResolveContainerPort.
func resolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	port := -1
	switch p.Type {
	case intstr.Int:
		port = p.IntValue()
	case intstr.String:
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				port = int(cp.ContainerPort)
				break
			}
		}
		if port == -1 {
			return 0, fmt.Errorf("couldn't find port: %s in container %q", p.StrVal, c.Name)
		}
	}
	if port <= 0 || port > 65535 {
		return 0, fmt.Errorf("invalid port number: %d", port)
	}
	return port, nil
}

// httpTarget is an HTTPGetAction compiled: everything of the request but
// the host, which may be the pod IP.
type httpTarget struct {
	scheme     string // "http" or "https"
	requestURI string
	hostHeader string // from a "Host" header; "" means host:port
	headers    string // "Name: value\r\n" lines, User-Agent and Accept included
	hasUA      bool
}

func compileHTTP(a *v1.HTTPGetAction) (*httpTarget, error) {
	ht := &httpTarget{scheme: strings.ToLower(string(a.Scheme))}
	if ht.scheme == "" {
		ht.scheme = "http"
	}
	if ht.scheme != "http" && ht.scheme != "https" {
		return nil, fmt.Errorf("unsupported scheme %q", a.Scheme)
	}
	// Parse the path the way upstream builds its URL: parse, set scheme
	// and host, print, parse again.
	u, err := url.Parse(a.Path)
	if err != nil {
		u = &url.URL{Path: a.Path}
	}
	u.Scheme, u.Host = ht.scheme, "h:1"
	u, err = url.Parse(u.String())
	if err != nil {
		return nil, fmt.Errorf("invalid path %q: %w", a.Path, err)
	}
	ht.requestURI = u.RequestURI()

	var b strings.Builder
	accept := true
	for _, h := range a.HTTPHeaders {
		name := textproto.CanonicalMIMEHeaderKey(h.Name)
		if !validHeaderName(name) || !validHeaderValue(h.Value) {
			return nil, fmt.Errorf("invalid header %q", h.Name)
		}
		switch name {
		case "Host":
			if ht.hostHeader == "" {
				ht.hostHeader = h.Value
			}
			continue
		case "Connection":
			continue // always "close"
		case "User-Agent":
			// As Go's HTTP client sends it: the first value only, and an
			// empty one sends none at all.
			if !ht.hasUA && h.Value != "" {
				b.WriteString(name + ": " + h.Value + "\r\n")
			}
			ht.hasUA = true
			continue
		case "Accept":
			accept = false
			if firstValue(a.HTTPHeaders, "Accept") == "" {
				continue // an empty Accept removes the header, like upstream
			}
		}
		b.WriteString(name + ": " + h.Value + "\r\n")
	}
	if accept {
		b.WriteString("Accept: */*\r\n")
	}
	ht.headers = b.String()
	return ht, nil
}

func firstValue(hs []v1.HTTPHeader, canonical string) string {
	for _, h := range hs {
		if textproto.CanonicalMIMEHeaderKey(h.Name) == canonical {
			return h.Value
		}
	}
	return ""
}

// request renders the request line and headers for host:port.
func (ht *httpTarget) request(hostPort, requestURI, hostHeader, userAgent string) []byte {
	if hostHeader == "" {
		hostHeader = hostPort
	}
	n := 40 + len(requestURI) + len(hostHeader) + len(ht.headers) + len(userAgent)
	b := make([]byte, 0, n)
	b = append(b, "GET "...)
	b = append(b, requestURI...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, hostHeader...)
	b = append(b, "\r\n"...)
	if !ht.hasUA {
		b = append(b, "User-Agent: "...)
		b = append(b, userAgent...)
		b = append(b, "\r\n"...)
	}
	b = append(b, ht.headers...)
	b = append(b, "Connection: close\r\n\r\n"...)
	return b
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\r' || c == '\n' || c == 0 {
			return false
		}
	}
	return true
}

func joinHostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
