package probes

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
	v1 "k8s.io/api/core/v1"
)

// maxRedirects is kubelet's (and Go's default) redirect limit.
const maxRedirects = 10

// disableHTTP2Env is apimachinery's opt-out (utilnet.SetTransportDefaults): when it is set to anything
// non-empty, HTTPS probes speak HTTP/1.1 only, as kubelet's do. New reads it once.
const disableHTTP2Env = "DISABLE_HTTP2"

// transportConfig is what every attempt's transport is made from.
type transportConfig struct {
	dialer         dialer
	maxHeaderBytes int64
	http2          bool
}

// newHTTPTransport is kubelet's probe transport (pkg/probe/http.New wrapped by apimachinery's
// utilnet.SetTransportDefaults): no proxy, no keep-alives, no compression, TLS unverified, and HTTPS
// offering h2 and http/1.1 by ALPN (unless DISABLE_HTTP2) through golang.org/x/net/http2 as
// apimachinery does. Without keep-alives an HTTP/2 connection is single-use too: it is closed
// (through the same abortive dialer) once the response body is closed, and MaxResponseHeaderBytes
// bounds HTTP/2 header lists as well (x/net/http2 honours it).
//
// Each attempt gets its own transport (doHTTP), closed with it, where kubelet shares one: closing
// cancels a dial the attempt no longer waits for (net/http detaches dials from requests, so kubelet's
// keeps connecting to a black-holed target for ~2 min after each timed-out probe), and x/net's
// HTTP/2 pool is per host:port, where single-use connections make concurrent HTTPS probes of one
// target take each other's fresh connections and redial (probes/doc.go, "http-transport").
func newHTTPTransport(c transportConfig) *http.Transport {
	d := c.dialer
	t := &http.Transport{
		// Proxy nil: HTTP_PROXY and friends are ignored, as kubelet does (http.ProxyURL(nil)).
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr, 0)
		},
		TLSClientConfig:        &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // kubelet does not verify probe targets
		DisableKeepAlives:      true,                                  // a fresh connection per probe, "Connection: close"
		DisableCompression:     true,                                  // no Accept-Encoding unless the probe sets it
		MaxResponseHeaderBytes: c.maxHeaderBytes,
		TLSHandshakeTimeout:    10 * time.Second, // the attempt timeout (client) is the real bound
		IdleConnTimeout:        90 * time.Second, // apimachinery's default; nothing is ever idle here
	}
	if c.http2 {
		// apimachinery logs and carries on over HTTP/1.1 if this fails; it cannot fail on a fresh
		// transport (it only refuses one already configured).
		_, _ = http2.ConfigureTransports(t)
	}
	return t
}

// newH2CTransport is kubelet 1.37's h2c probe transport (pkg/probe/http.New's h2cTransport, used
// by ProbeH2C when H2CContainerProbe is on and the probe's protocol is HTTP2): net/http's own
// HTTP/2 spoken in cleartext with prior knowledge, and no other protocol; no proxy, no keep-alives,
// no compression, no TLS configuration and no apimachinery defaults. What this package adds to
// every transport is added here too: the abortive-close dialer and the response header cap (net/http's
// HTTP/2 bounds the header list by MaxResponseHeaderBytes).
func newH2CTransport(c transportConfig) *http.Transport {
	d := c.dialer
	t := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr, 0)
		},
		DisableKeepAlives:      true,
		DisableCompression:     true,
		MaxResponseHeaderBytes: c.maxHeaderBytes,
	}
	t.Protocols = new(http.Protocols)
	t.Protocols.SetUnencryptedHTTP2(true)
	return t
}

// formatURL builds the probe URL as kubelet does: path may carry a query; host and port are joined
// (IPv6 bracketed).
func formatURL(scheme, host string, port int, path string) *url.URL {
	u, err := url.Parse(path)
	// kubelet: an unparsable path is used verbatim as the URL path.
	if err != nil {
		u = &url.URL{Path: path}
	}
	u.Scheme = scheme
	u.Host = joinHostPort(host, port)
	return u
}

// v1HeaderToHTTPHeader canonicalizes header names and keeps repeated names' values in order.
func v1HeaderToHTTPHeader(headers []v1.HTTPHeader) http.Header {
	h := make(http.Header, len(headers))
	for _, hdr := range headers {
		h.Add(hdr.Name, hdr.Value)
	}
	return h
}

// newHTTPRequest builds the GET request of an HTTP probe (kubelet's NewRequestForHTTPGetAction).
func newHTTPRequest(ctx context.Context, action *v1.HTTPGetAction, container *v1.Container, podIP, userAgent string) (*http.Request, error) {
	scheme := strings.ToLower(string(action.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := action.Host
	if host == "" {
		host = podIP
	}
	port, err := ResolveContainerPort(action.Port, container)
	if err != nil {
		return nil, err
	}
	u := formatURL(scheme, host, port, action.Path)
	headers := v1HeaderToHTTPHeader(action.HTTPHeaders)

	// kubelet re-parses the URL's string form, which is what turns a path without a leading slash
	// ("healthz") into "/healthz". A string that does not parse back is the probe's error, with the
	// parser's text as kubelet reports it.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", userAgent)
	} // an explicit empty value stays: Go then sends no User-Agent at all
	if _, ok := headers["Accept"]; !ok {
		headers.Set("Accept", "*/*")
	} else if headers.Get("Accept") == "" {
		headers.Del("Accept")
	}
	req.Header = headers
	req.Host = headers.Get("Host")
	return req, nil
}

// redirectChecker is kubelet's RedirectChecker: follow same-hostname redirects (any port or scheme),
// hand back the 3xx response for another hostname, stop after 10.
func redirectChecker(followNonLocal bool, req *http.Request, via []*http.Request) error {
	if !followNonLocal && req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// bodyBufPool holds MaxOutputLength byte buffers for reading response bodies.
var bodyBufPool = sync.Pool{New: func() any { b := make([]byte, MaxOutputLength); return &b }}

// readAtMost is kubelet's utilio.ReadAtMost(body, 10 KiB): it reads at most MaxOutputLength bytes
// and never more; reaching the limit is not an error (the body is truncated), and neither is EOF.
// Any other read error — a body shorter than its Content-Length, a chunked body cut before its last
// chunk, a reset or the timeout while reading — is returned, with what was read before it.
func readAtMost(r io.Reader) (string, error) {
	bp := bodyBufPool.Get().(*[]byte)
	defer bodyBufPool.Put(bp)
	buf := *bp
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return string(buf[:n]), err
		}
	}
	return string(buf[:n]), nil
}

// BodyError is the error of an HTTP probe whose response body broke off after the status line and
// headers had arrived (kubelet's DoHTTPProbe returns it as a probe error: retried, then the result
// is discarded). Its text is the transport's error alone, as kubelet's event shows it.
type BodyError struct {
	Err error
}

func (e *BodyError) Error() string { return e.Err.Error() }
func (e *BodyError) Unwrap() error { return e.Err }

// transports is an HTTP attempt's own transports, built as its requests need them and closed with
// it: kubelet's (newHTTPTransport) for https requests, and for http:// requests the same without
// its HTTP/2 set-up. HTTP/2 is offered by ALPN, in TLS only, so kubelet's transport serves an
// http:// request over HTTP/1.1 exactly as one without HTTP/2 does, and an http:// probe (the
// common case) no longer pays for x/net's ConfigureTransports: 1,800 → 900 bytes and 14 → 3
// allocations per attempt (BenchmarkAttemptTransports). A redirect to https on the same host (which
// kubelet follows) goes over kubelet's transport, built then. Both are *http.Transport, so net/http
// cancels a request through its context as before (a RoundTripper of our own would have made it
// start a timer goroutine per request). With h2c (kubelet 1.37's HTTP2 probe protocol) one
// transport, newH2CTransport, serves every request, as kubelet's h2cTransport does.
type transports struct {
	cfg   transportConfig
	h2c   bool
	plain *http.Transport // http:// requests, or every request with h2c
	tls   *http.Transport // https:// requests
}

// forScheme returns the transport for a request of scheme, building it on first use.
func (a *transports) forScheme(scheme string) *http.Transport {
	switch {
	case a.h2c:
		if a.plain == nil {
			a.plain = newH2CTransport(a.cfg)
		}
		return a.plain
	case scheme == "https":
		if a.tls == nil {
			a.tls = newHTTPTransport(a.cfg)
		}
		return a.tls
	default:
		if a.plain == nil {
			c := a.cfg
			c.http2 = false
			a.plain = newHTTPTransport(c)
		}
		return a.plain
	}
}

// close closes what is left and cancels a dial nobody waits for.
func (a *transports) close() {
	if a.plain != nil {
		a.plain.CloseIdleConnections()
	}
	if a.tls != nil {
		a.tls.CloseIdleConnections()
	}
}

// doHTTP performs req with the attempt timeout covering connect, TLS, headers, redirects and body.
func (p *Prober) doHTTP(req *http.Request, timeout time.Duration) (Outcome, error) {
	return p.doHTTPWith(&transports{cfg: p.transport}, req, timeout)
}

// doHTTPWith is doHTTP over tr, the attempt's own transports, which it closes.
func (p *Prober) doHTTPWith(tr *transports, req *http.Request, timeout time.Duration) (Outcome, error) {
	defer tr.close()
	client := &http.Client{Transport: tr.forScheme(req.URL.Scheme), Timeout: timeout}
	client.CheckRedirect = func(next *http.Request, via []*http.Request) error {
		if err := redirectChecker(p.followNonLocal, next, via); err != nil {
			return err
		}
		client.Transport = tr.forScheme(next.URL.Scheme) // net/http reads it again for each hop
		return nil
	}
	res, err := client.Do(req)
	if exhausted(err) {
		return exhaustedOutcome(err)
	}
	if err != nil {
		return Outcome{Result: Failure, Output: err.Error(), Reason: classifyHTTPError(err)}, nil
	}
	body, err := readAtMost(res.Body)
	_ = res.Body.Close() // without keep-alives this closes the connection
	if err != nil {
		// kubelet: (Failure, "", err) — a probe error, retried and then discarded (probes/doc.go,
		// "Broken-off bodies").
		return Outcome{Result: Failure, Reason: classifyHTTPError(err)}, &BodyError{Err: err}
	}
	if res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusBadRequest {
		if res.StatusCode >= http.StatusMultipleChoices { // a redirect we did not follow
			return Outcome{Result: Warning, Output: "Probe terminated redirects, Response body: " + body, Reason: ReasonRedirect}, nil
		}
		return Outcome{Result: Success, Output: body}, nil
	}
	// kubelet deliberately leaves the body out of the failure output (#99425).
	return Outcome{Result: Failure, Output: "HTTP probe failed with statuscode: " + strconv.Itoa(res.StatusCode), Reason: ReasonStatusCode}, nil
}

func classifyHTTPError(err error) Reason {
	var uerr *url.Error
	if errors.As(err, &uerr) && strings.HasPrefix(uerr.Err.Error(), "stopped after") {
		return ReasonRedirect
	}
	var (
		h2Conn   http2.ConnectionError
		h2Stream http2.StreamError
		h2GoAway http2.GoAwayError
	)
	if strings.Contains(err.Error(), "server response headers exceeded") ||
		errors.As(err, &h2Conn) || errors.As(err, &h2Stream) || errors.As(err, &h2GoAway) {
		return ReasonProtocol // an HTTP/2 header list over the cap is a COMPRESSION_ERROR
	}
	return classifyNetError(err)
}
