package probes

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
)

// maxRedirects is kubelet's (and Go's default) redirect limit.
const maxRedirects = 10

func newHTTPTransport(d dialer, maxHeaderBytes int64) *http.Transport {
	return &http.Transport{
		// Proxy nil: HTTP_PROXY and friends are ignored, as kubelet does (http.ProxyURL(nil)).
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr, 0)
		},
		TLSClientConfig:        &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // kubelet does not verify probe targets
		DisableKeepAlives:      true,                                  // a fresh connection per probe, "Connection: close"
		DisableCompression:     true,                                  // no Accept-Encoding unless the probe sets it
		MaxResponseHeaderBytes: maxHeaderBytes,
		TLSHandshakeTimeout:    10 * time.Second, // the attempt timeout (client) is the real bound
	}
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

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	if err != nil {
		return nil, fmt.Errorf("build probe request: %w", err)
	}
	req.URL = u // set directly: kubelet's URL, not a re-parse of its string form
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
func redirectChecker(followNonLocal bool) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if !followNonLocal && req.URL.Hostname() != via[0].URL.Hostname() {
			return http.ErrUseLastResponse
		}
		if len(via) >= maxRedirects {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// bodyBufPool holds MaxOutputLength+1 byte buffers for reading response bodies.
var bodyBufPool = sync.Pool{New: func() any { b := make([]byte, MaxOutputLength+1); return &b }}

// readAtMost reads up to MaxOutputLength bytes of r (one more to detect truncation, which is not an
// error) and never more.
func readAtMost(r io.Reader) (string, error) {
	bp := bodyBufPool.Get().(*[]byte)
	defer bodyBufPool.Put(bp)
	n, err := io.ReadFull(r, *bp)
	switch {
	case err == nil: // MaxOutputLength+1 bytes: truncated
		return string((*bp)[:MaxOutputLength]), nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return string((*bp)[:n]), nil
	default:
		return string((*bp)[:n]), err
	}
}

// doHTTP performs req with the attempt timeout covering connect, TLS, headers, redirects and body.
func (p *Prober) doHTTP(req *http.Request, timeout time.Duration) Outcome {
	client := &http.Client{
		Transport:     p.transport,
		Timeout:       timeout,
		CheckRedirect: redirectChecker(p.followNonLocal),
	}
	res, err := client.Do(req)
	if err != nil {
		return Outcome{Result: Failure, Output: err.Error(), Reason: classifyHTTPError(err)}
	}
	body, err := readAtMost(res.Body)
	_ = res.Body.Close() // without keep-alives this closes the connection
	if err != nil {
		// kubelet reports a body read error as a probe error (retried, then discarded); the target did
		// answer badly, so here it is a Failure with the error text.
		return Outcome{Result: Failure, Output: err.Error(), Reason: classifyHTTPError(err)}
	}
	if res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusBadRequest {
		if res.StatusCode >= http.StatusMultipleChoices { // a redirect we did not follow
			return Outcome{Result: Warning, Output: "Probe terminated redirects, Response body: " + body, Reason: ReasonRedirect}
		}
		return Outcome{Result: Success, Output: body}
	}
	// kubelet deliberately leaves the body out of the failure output (#99425).
	return Outcome{Result: Failure, Output: "HTTP probe failed with statuscode: " + strconv.Itoa(res.StatusCode), Reason: ReasonStatusCode}
}

func classifyHTTPError(err error) Reason {
	var uerr *url.Error
	if errors.As(err, &uerr) && strings.HasPrefix(uerr.Err.Error(), "stopped after") {
		return ReasonRedirect
	}
	if strings.Contains(err.Error(), "server response headers exceeded") {
		return ReasonProtocol
	}
	return classifyNetError(err)
}
