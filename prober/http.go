package prober

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// outcome is a handler's verdict, before it becomes a Result.
type outcome int

const (
	success outcome = iota
	warning         // success, with a ProbeWarning event
	failure
	unknown
)

// httpReq is one hop of an HTTP probe.
type httpReq struct {
	scheme     string
	host       string // for TLS server name and the same-host check
	hostPort   string
	requestURI string
	hostHeader string
}

func (r httpReq) url() string {
	return r.scheme + "://" + r.hostPort + r.requestURI
}

// probeHTTP runs an HTTP GET probe: 2xx and 3xx succeed, redirects are
// followed to the same host only (a redirect elsewhere succeeds with a
// warning), and at most MaxOutput bytes of a body are read. The connection
// is dialled directly (no proxy), TLS is not verified, keep-alive is off and
// each connection is reset on close. cached, if non-nil, is the rendered
// first request for this host; the rendered request is returned for reuse.
func (n *network) probeHTTP(ctx context.Context, ht *httpTarget, host string, port int, timeout time.Duration, cached []byte) (outcome, string, []byte) {
	req := httpReq{scheme: ht.scheme, host: host, hostPort: joinHostPort(host, port), requestURI: ht.requestURI, hostHeader: ht.hostHeader}
	first := cached
	if first == nil {
		first = ht.request(req.hostPort, req.requestURI, req.hostHeader, n.userAgent)
	}
	raw := first
	for hops := 1; ; hops++ {
		code, location, body, err := n.httpOnce(ctx, req, raw)
		if err != nil {
			if timedOut(ctx) {
				err = fmt.Errorf("context deadline exceeded (Client.Timeout %s exceeded)", timeout)
			}
			return failure, fmt.Sprintf("Get %q: %v", req.url(), err), first
		}
		if isRedirect(code) && location != "" {
			next, err := redirectTo(req, location)
			if err != nil {
				return failure, fmt.Sprintf("Get %q: %v", req.url(), err), first
			}
			if next.host == host {
				if hops >= MaxRedirects {
					return failure, fmt.Sprintf("Get %q: stopped after %d redirects", next.url(), MaxRedirects), first
				}
				req = next
				raw = ht.request(req.hostPort, req.requestURI, req.hostHeader, n.userAgent)
				continue
			}
		}
		switch {
		case code >= 200 && code < 300:
			return success, "", first
		case code >= 300 && code < 400:
			return warning, "Probe terminated redirects, Response body: " + string(body), first
		}
		return failure, "HTTP probe failed with statuscode: " + strconv.Itoa(code), first
	}
}

func isRedirect(code int) bool {
	switch code {
	case 301, 302, 303, 307, 308:
		return true
	}
	return false
}

// redirectTo resolves a Location header against the request it answers.
// Like net/http, a custom Host header survives relative redirects only.
func redirectTo(from httpReq, location string) (httpReq, error) {
	base, err := url.Parse(from.url())
	if err != nil {
		return httpReq{}, err
	}
	loc, err := url.Parse(location)
	if err != nil {
		return httpReq{}, fmt.Errorf("failed to parse Location header %q: %w", location, err)
	}
	u := base.ResolveReference(loc)
	if u.Scheme != "http" && u.Scheme != "https" {
		return httpReq{}, fmt.Errorf("unsupported protocol scheme %q", u.Scheme)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	next := httpReq{scheme: u.Scheme, host: u.Hostname(), hostPort: net.JoinHostPort(u.Hostname(), port), requestURI: u.RequestURI()}
	if from.hostHeader != "" && !loc.IsAbs() {
		next.hostHeader = from.hostHeader
	}
	return next, nil
}

// httpOnce sends one request on a fresh connection and returns the status
// code, the Location header and, for a 3xx, up to MaxOutput bytes of body.
// Other bodies are read up to MaxOutput and discarded.
func (n *network) httpOnce(ctx context.Context, req httpReq, raw []byte) (int, string, []byte, error) {
	tcp, err := n.dial(ctx, req.hostPort)
	if err != nil {
		return 0, "", nil, err
	}
	defer func() { _ = tcp.Close() }()
	stop := abortOnDone(ctx, tcp)
	defer stop()

	var conn net.Conn = tcp
	if req.scheme == "https" {
		cfg := n.tlsNoSNI
		if net.ParseIP(req.host) == nil {
			cfg = &tls.Config{InsecureSkipVerify: true, ServerName: req.host} //nolint:gosec // like upstream
		}
		tc := tls.Client(tcp, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return 0, "", nil, err
		}
		conn = tc
	}
	if _, err := conn.Write(raw); err != nil {
		return 0, "", nil, err
	}
	br, _ := n.bufs.Get().(*bufio.Reader)
	if br == nil {
		br = bufio.NewReaderSize(conn, 4096)
	} else {
		br.Reset(conn)
	}
	defer func() { br.Reset(nil); n.bufs.Put(br) }()

	var resp *http.Response
	for {
		resp, err = http.ReadResponse(br, nil)
		if err != nil {
			return 0, "", nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		// An informational response (100 Continue, 103 Early Hints): the
		// real one follows.
	}
	// resp.Body is not closed: closing drains it, which could mean a
	// gigabyte; the connection is reset instead.
	location := resp.Header.Get("Location")
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		var body bytes.Buffer
		if _, err := io.CopyN(&body, resp.Body, MaxOutput); err != nil && !errors.Is(err, io.EOF) {
			return 0, "", nil, err
		}
		return resp.StatusCode, location, body.Bytes(), nil
	}
	if _, err := io.CopyN(io.Discard, resp.Body, MaxOutput); err != nil && !errors.Is(err, io.EOF) {
		return 0, "", nil, err
	}
	return resp.StatusCode, location, nil, nil
}
