package probes

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestFormatURL is kubelet's request_test TestFormatURL.
func TestFormatURL(t *testing.T) {
	for _, tc := range []struct {
		scheme, host string
		port         int
		path, want   string
	}{
		{"http", "localhost", 93, "", "http://localhost:93"},
		{"https", "localhost", 93, "/path", "https://localhost:93/path"},
		{"http", "localhost", 93, "?foo", "http://localhost:93?foo"},
		{"https", "localhost", 93, "/path?bar", "https://localhost:93/path?bar"},
		{"http", "fd00::1", 8080, "/healthz?x=1", "http://[fd00::1]:8080/healthz?x=1"},
	} {
		assert.Equal(t, tc.want, formatURL(tc.scheme, tc.host, tc.port, tc.path).String())
	}
}

// Test_v1HeaderToHTTPHeader and TestHeaderConversion are kubelet's request_test cases.
func Test_v1HeaderToHTTPHeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []v1.HTTPHeader
		want http.Header
	}{
		{"multiple", []v1.HTTPHeader{{Name: "Host", Value: "foo.example.com"}, {Name: "X-Forwarded-For", Value: "1.2.3.4"},
			{Name: "X-Forwarded-For", Value: "5.6.7.8"}},
			http.Header{"Host": {"foo.example.com"}, "X-Forwarded-For": {"1.2.3.4", "5.6.7.8"}}},
		{"case insensitive", []v1.HTTPHeader{{Name: "HOST", Value: "example.com"}, {Name: "FOO-bAR", Value: "value"}},
			http.Header{"Host": {"example.com"}, "Foo-Bar": {"value"}}},
		{"empty", []v1.HTTPHeader{}, http.Header{}},
		{"accept twice", []v1.HTTPHeader{{Name: "Accept", Value: "application/json"}, {Name: "accept", Value: "*/*"}},
			http.Header{"Accept": {"application/json", "*/*"}}},
		{"mixed", []v1.HTTPHeader{{Name: "accept", Value: "application/json"}, {Name: "Accept", Value: "*/*"},
			{Name: "pragma", Value: "no-cache"}, {Name: "X-forwarded-for", Value: "username"}},
			http.Header{"Accept": {"application/json", "*/*"}, "Pragma": {"no-cache"}, "X-Forwarded-For": {"username"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, v1HeaderToHTTPHeader(tc.in))
		})
	}
}

// TestNewHTTPRequest checks the request kubelet would build: URL (named port, default host, IPv6,
// query), default and overridden headers, Host override.
func TestNewHTTPRequest(t *testing.T) {
	c := &v1.Container{Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	for _, tc := range []struct {
		name       string
		action     v1.HTTPGetAction
		podIP      string
		wantURL    string
		wantHeader http.Header
		wantHost   string
		wantErr    bool
	}{
		{name: "defaults", action: v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}, podIP: "10.0.0.1",
			wantURL:    "http://10.0.0.1:8080/healthz",
			wantHeader: http.Header{"User-Agent": {UserAgent}, "Accept": {"*/*"}}},
		{name: "https ipv6 query", action: v1.HTTPGetAction{Path: "/h?a=b", Port: intstr.FromInt(443), Scheme: v1.URISchemeHTTPS}, podIP: "fd00::5",
			wantURL:    "https://[fd00::5]:443/h?a=b",
			wantHeader: http.Header{"User-Agent": {UserAgent}, "Accept": {"*/*"}}},
		{name: "host field wins over pod IP", action: v1.HTTPGetAction{Host: "example.org", Path: "/", Port: intstr.FromInt(81)}, podIP: "10.0.0.1",
			wantURL:    "http://example.org:81/",
			wantHeader: http.Header{"User-Agent": {UserAgent}, "Accept": {"*/*"}}},
		{name: "empty UA and Accept", action: v1.HTTPGetAction{Path: "/", Port: intstr.FromInt(80),
			HTTPHeaders: []v1.HTTPHeader{{Name: "user-agent", Value: ""}, {Name: "accept", Value: ""}}}, podIP: "10.0.0.1",
			wantURL: "http://10.0.0.1:80/", wantHeader: http.Header{"User-Agent": {""}}},
		{name: "host header override", action: v1.HTTPGetAction{Path: "/", Port: intstr.FromInt(80),
			HTTPHeaders: []v1.HTTPHeader{{Name: "HOST", Value: "muffins.cupcakes.org"}}}, podIP: "10.0.0.1",
			wantURL: "http://10.0.0.1:80/", wantHost: "muffins.cupcakes.org",
			wantHeader: http.Header{"Host": {"muffins.cupcakes.org"}, "User-Agent": {UserAgent}, "Accept": {"*/*"}}},
		{name: "path without a leading slash", action: v1.HTTPGetAction{Path: "healthz?x=1", Port: intstr.FromInt(80)}, podIP: "10.0.0.1",
			wantURL:    "http://10.0.0.1:80/healthz?x=1",
			wantHeader: http.Header{"User-Agent": {UserAgent}, "Accept": {"*/*"}}},
		{name: "unknown port name", action: v1.HTTPGetAction{Path: "/", Port: intstr.FromString("nope")}, wantErr: true},
		{name: "port out of range", action: v1.HTTPGetAction{Path: "/", Port: intstr.FromInt(70000)}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := newHTTPRequest(context.Background(), &tc.action, c, tc.podIP, UserAgent)
			if tc.wantErr {
				require.ErrorIs(t, err, ErrInvalidPort)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantURL, req.URL.String())
			assert.Equal(t, tc.wantHeader, req.Header)
			assert.Equal(t, tc.wantHost, req.Host)
			assert.Equal(t, http.MethodGet, req.Method)
		})
	}
}

// echoHandler writes back the request's headers and Host, and "Headers: <n>" / "Names: <sorted>".
func echoHandler(w http.ResponseWriter, r *http.Request) {
	names := make([]string, 0, len(r.Header))
	for k, vs := range r.Header {
		names = append(names, k)
		for _, v := range vs {
			fmt.Fprintf(w, "%s: %s\n", k, v)
		}
	}
	sort.Strings(names)
	fmt.Fprintf(w, "Host: %s\nHeaders: %d\nNames: %s\n", r.Host, len(r.Header), strings.Join(names, ", "))
}

func statusHandler(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		_, _ = w.Write([]byte("ok body"))
	}
}

func redirectThen(code int, final http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/new", code)
	})
	mux.Handle("/new", final)
	return mux
}

// TestHTTPProbeChecker is kubelet's http_test TestHTTPProbeChecker (prober following non-local
// redirects, 1 s timeout) against a real server.
func TestHTTPProbeChecker(t *testing.T) {
	hdr := func(kv ...string) []v1.HTTPHeader {
		var hs []v1.HTTPHeader
		for i := 0; i < len(kv); i += 2 {
			hs = append(hs, v1.HTTPHeader{Name: kv[i], Value: kv[i+1]})
		}
		return hs
	}
	redirect308NoLocation := http.NewServeMux()
	redirect308NoLocation.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/new", http.StatusFound) })
	redirect308NoLocation.HandleFunc("/new", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusPermanentRedirect)
		_, _ = w.Write([]byte("ok body"))
	})

	type tc struct {
		name       string
		handler    http.Handler
		headers    []v1.HTTPHeader
		want       Result
		wantReason Reason
		contains   []string
		excludes   []string
	}
	cases := []tc{
		{name: "200 ok body", handler: statusHandler(200), want: Success, contains: []string{"ok body"}},
		{name: "default header count", handler: http.HandlerFunc(echoHandler), want: Success, contains: []string{"Headers: 3\n"}},
		{name: "default header names", handler: http.HandlerFunc(echoHandler), want: Success,
			contains: []string{"Names: Accept, Connection, User-Agent\n", "Connection: close\n"}},
		{name: "accept-encoding gzip", handler: http.HandlerFunc(echoHandler), headers: hdr("Accept-Encoding", "gzip"), want: Success,
			contains: []string{"Accept-Encoding: gzip\n"}},
		{name: "accept-encoding foo", handler: http.HandlerFunc(echoHandler), headers: hdr("Accept-Encoding", "foo"), want: Success,
			contains: []string{"Accept-Encoding: foo\n"}},
		{name: "accept-encoding empty", handler: http.HandlerFunc(echoHandler), headers: hdr("Accept-Encoding", ""), want: Success,
			contains: []string{"Accept-Encoding: \n"}},
		{name: "custom header", handler: http.HandlerFunc(echoHandler), headers: hdr("X-Muffins-Or-Cupcakes", "muffins"), want: Success,
			contains: []string{"X-Muffins-Or-Cupcakes: muffins\n"}},
		{name: "custom UA", handler: http.HandlerFunc(echoHandler), headers: hdr("User-Agent", "foo/1.0"), want: Success,
			contains: []string{"User-Agent: foo/1.0\n"}, excludes: []string{"kube-probe"}},
		{name: "empty UA removes it", handler: http.HandlerFunc(echoHandler), headers: hdr("User-Agent", ""), want: Success,
			excludes: []string{"User-Agent"}},
		{name: "default UA", handler: http.HandlerFunc(echoHandler), want: Success, contains: []string{"User-Agent: kube-probe/1.37\n"}},
		{name: "UA and accept", handler: http.HandlerFunc(echoHandler), headers: hdr("User-Agent", "foo/1.0", "Accept", "text/html"),
			want: Success, contains: []string{"Accept: text/html\n", "User-Agent: foo/1.0\n"}},
		{name: "accept foo", handler: http.HandlerFunc(echoHandler), headers: hdr("Accept", "foo/*"), want: Success,
			contains: []string{"Accept: foo/*\n"}},
		{name: "accept foo with other headers", handler: http.HandlerFunc(echoHandler), headers: hdr("X-Muffins-Or-Cupcakes", "muffins", "Accept", "foo/*"),
			want: Success, contains: []string{"Accept: foo/*\n", "X-Muffins-Or-Cupcakes: muffins\n"}},
		{name: "empty accept removes it", handler: http.HandlerFunc(echoHandler), headers: hdr("Accept", ""), want: Success,
			excludes: []string{"Accept:"}},
		{name: "default accept", handler: http.HandlerFunc(echoHandler), want: Success, contains: []string{"Accept: */*\n"}},
		{name: "lower-case header names canonicalized", handler: http.HandlerFunc(echoHandler), headers: hdr("x-forwarded-for", "a", "X-FORWARDED-FOR", "b"),
			want: Success, contains: []string{"X-Forwarded-For: a\nX-Forwarded-For: b\n"}},
		{name: "host header", handler: http.HandlerFunc(echoHandler), headers: hdr("Host", "muffins.cupcakes.org"), want: Success,
			contains: []string{"Host: muffins.cupcakes.org\n"}},
		{name: "invalid status code", handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(-1) }),
			want: Failure, wantReason: ReasonConnectionReset},
		{name: "500", handler: statusHandler(500), want: Failure, wantReason: ReasonStatusCode,
			contains: []string{"HTTP probe failed with statuscode: 500"}, excludes: []string{"ok body"}},
		{name: "399 is an unfollowed redirect", handler: statusHandler(399), want: Warning, wantReason: ReasonRedirect},
		{name: "204 is success", handler: statusHandler(204), want: Success},
		{name: "400 is failure", handler: statusHandler(400), want: Failure, wantReason: ReasonStatusCode},
		{name: "timeout", handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			waitCtx(r.Context(), 3_000_000_000)
		}), want: Failure, wantReason: ReasonTimeout, contains: []string{"Client.Timeout exceeded"}},
		{name: "redirect 308 without location", handler: redirect308NoLocation, want: Warning, wantReason: ReasonRedirect,
			contains: []string{"Probe terminated redirects, Response body: ok body"}},
	}
	for _, code := range []int{301, 302, 307, 308} {
		cases = append(cases,
			tc{name: "redirect " + strconv.Itoa(code) + " to 200", handler: redirectThen(code, statusHandler(200)), want: Success},
			tc{name: "redirect " + strconv.Itoa(code) + " to 500", handler: redirectThen(code, statusHandler(500)), want: Failure, wantReason: ReasonStatusCode},
		)
	}
	p := New(nil, WithFollowNonLocalRedirects(true))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.handler)
			// A case not about the timeout gets a roomy one, so that a loaded machine (a redirect is
			// two requests) cannot turn it into a timeout.
			timeout := int32(5)
			if tc.wantReason == ReasonTimeout {
				timeout = 1
			}
			out, err := p.Probe(context.Background(), httpProbe(t, s.URL, "/", timeout, tc.headers...), Target{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, out.Result, "output: %s", out.Output)
			if tc.wantReason != "" {
				assert.Equal(t, tc.wantReason, out.Reason)
			}
			if tc.want == Success {
				assert.Equal(t, ReasonNone, out.Reason)
			}
			for _, s := range tc.contains {
				assert.Contains(t, out.Output, s)
			}
			for _, s := range tc.excludes {
				assert.NotContains(t, out.Output, s)
			}
			assert.Positive(t, out.Duration)
		})
	}
}

// TestHTTPProbeChecker_NonLocalRedirects is kubelet's test: kubelet's mode (local only) and the
// follow-everything mode.
func TestHTTPProbeChecker_NonLocalRedirects(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("loc"), http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/success", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("success body")) })
	mux.HandleFunc("/fail", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	server := newServer(t, mux)
	other := newServer(t, mux) // same host, another port

	redirect := func(loc string) string { return "/redirect?loc=" + url.QueryEscape(loc) }
	for _, tc := range []struct {
		name                string
		path                string
		local, nonlocal     Result
		localReason, nlReas Reason
	}{
		{"local success", redirect("/success"), Success, Success, ReasonNone, ReasonNone},
		{"local fail", redirect("/fail"), Failure, Failure, ReasonStatusCode, ReasonStatusCode},
		{"other port success", redirect(other.URL + "/success"), Success, Success, ReasonNone, ReasonNone},
		{"other port fail", redirect(other.URL + "/fail"), Failure, Failure, ReasonStatusCode, ReasonStatusCode},
		{"other host", redirect("http://0.0.0.0/fail"), Warning, Failure, ReasonRedirect, ""},
		{"loop", "/loop", Failure, Failure, ReasonRedirect, ReasonRedirect},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []struct {
				follow bool
				want   Result
				reason Reason
			}{{false, tc.local, tc.localReason}, {true, tc.nonlocal, tc.nlReas}} {
				out, err := New(nil, WithFollowNonLocalRedirects(mode.follow)).Probe(context.Background(),
					httpProbe(t, server.URL, tc.path, 1), Target{})
				require.NoError(t, err)
				assert.Equal(t, mode.want, out.Result, "follow=%v output=%s", mode.follow, out.Output)
				if mode.reason != "" {
					assert.Equal(t, mode.reason, out.Reason, "follow=%v", mode.follow)
				}
				if tc.name == "loop" {
					assert.Contains(t, out.Output, "stopped after 10 redirects")
				}
				if mode.want == Warning {
					assert.True(t, strings.HasPrefix(out.Output, "Probe terminated redirects, Response body: "), out.Output)
				}
			}
		})
	}
}

// TestHTTPProbeChecker_HostHeaderPreservedAfterRedirect is kubelet's test.
func TestHTTPProbeChecker_HostHeaderPreservedAfterRedirect(t *testing.T) {
	const successHost, failHost = "www.success.com", "www.fail.com"
	mux := http.NewServeMux()
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/success", http.StatusFound) })
	mux.HandleFunc("/success", func(w http.ResponseWriter, r *http.Request) {
		if r.Host == successHost {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
	})
	server := newServer(t, mux)
	for _, tc := range []struct {
		host string
		want Result
	}{{successHost, Success}, {failHost, Failure}} {
		for _, follow := range []bool{false, true} {
			out, err := New(nil, WithFollowNonLocalRedirects(follow)).Probe(context.Background(),
				httpProbe(t, server.URL, "/redirect", 1, v1.HTTPHeader{Name: "Host", Value: tc.host}), Target{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, out.Result, "host=%s follow=%v", tc.host, follow)
		}
	}
}

// TestHTTPProbeChecker_Payload covers kubelet's PayloadTruncated and PayloadNormal.
func TestHTTPProbeChecker_Payload(t *testing.T) {
	for _, tc := range []struct {
		size, want int
	}{{MaxOutputLength + 1, MaxOutputLength}, {MaxOutputLength - 1, MaxOutputLength - 1}, {MaxOutputLength, MaxOutputLength}} {
		body := strings.Repeat("x", tc.size)
		s := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) }))
		out, err := New(nil).Probe(context.Background(), httpProbe(t, s.URL, "/", 1), Target{})
		require.NoError(t, err)
		assert.Equal(t, Success, out.Result)
		assert.Equal(t, body[:tc.want], out.Output, "size %d", tc.size)
	}
}

// TestHTTPProbeProxy is kubelet's: proxy environment variables are ignored.
func TestHTTPProbeProxy(t *testing.T) {
	proxy := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("proxied")) }))
	for _, k := range []string{"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"} {
		t.Setenv(k, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	p := New(nil)
	require.Nil(t, newHTTPTransport(p.transport).Proxy, "the transport must not consult the environment")
	// A name that cannot resolve: only a proxy could make this succeed.
	spec := &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{
		Host: "probe-target.invalid", Port: intstr.FromInt(80), Path: "/"}}}
	out, err := p.Probe(context.Background(), spec, Target{})
	require.NoError(t, err)
	assert.Equal(t, Failure, out.Result)
	assert.NotContains(t, out.Output, "proxied")
}

// TestHTTPSInsecure: a self-signed certificate is accepted (no verification), as kubelet does.
func TestHTTPSInsecure(t *testing.T) {
	s := newTLSServer(t, statusHandler(200))
	out, err := New(nil).Probe(context.Background(), httpProbe(t, s.URL, "/", 1), Target{})
	require.NoError(t, err)
	assert.Equal(t, Success, out.Result, out.Output)
	assert.Equal(t, "ok body", out.Output)
}

// TestHTTPNamedPort resolves the port from the container and the host from the pod IP.
func TestHTTPNamedPort(t *testing.T) {
	s := newServer(t, statusHandler(200))
	_, port := hostPort(t, s.URL)
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}
	spec := &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("web"), Path: "/"}}}
	out, err := New(nil).Probe(context.Background(), spec, Target{Container: c, PodIP: "127.0.0.1"})
	require.NoError(t, err)
	assert.Equal(t, Success, out.Result, out.Output)

	spec.HTTPGet.Port = intstr.FromString("missing")
	out, err = New(nil).Probe(context.Background(), spec, Target{Container: c, PodIP: "127.0.0.1"})
	require.ErrorIs(t, err, ErrInvalidPort)
	assert.Equal(t, Unknown, out.Result)
	assert.Equal(t, ReasonInvalidPort, out.Reason)
}

// TestHTTPConnectionRefused: a closed port is a Failure with the dial error, reason ConnectionRefused.
func TestHTTPConnectionRefused(t *testing.T) {
	s := newServer(t, statusHandler(200))
	url := s.URL
	s.Close()
	out, err := New(nil).Probe(context.Background(), httpProbe(t, url, "/", 1), Target{})
	require.NoError(t, err)
	assert.Equal(t, Failure, out.Result)
	assert.Equal(t, ReasonConnectionRefused, out.Reason)
	assert.Contains(t, out.Output, "connection refused")
}

// TestHTTPBrokenOffBody: once the status line and headers have arrived, an error reading the body is
// kubelet's probe error (DoHTTPProbe returns (Failure, "", err)): Probe returns a *BodyError whose
// text is the transport's alone and no output; what lies beyond the 10 KiB kubelet reads is never
// read, so a body that breaks off after it is still a Success.
func TestHTTPBrokenOffBody(t *testing.T) {
	stall := func(c net.Conn) { _, _ = io.Copy(io.Discard, c) } // until the prober closes
	for _, tc := range []struct {
		name       string
		response   string
		hang       bool
		wantErr    string // "" for no error
		wantReason Reason
		want       Result
		wantOutput string
	}{
		{name: "16 of 100 bytes then close", response: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789abcdef",
			want: Failure, wantErr: "unexpected EOF", wantReason: ReasonConnectionReset},
		{name: "chunked cut before the last chunk", response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
			want: Failure, wantErr: "unexpected EOF", wantReason: ReasonConnectionReset},
		{name: "500 with a short body: still the body error", response: "HTTP/1.1 500 Oops\r\nContent-Length: 100\r\n\r\nshort",
			want: Failure, wantErr: "unexpected EOF", wantReason: ReasonConnectionReset},
		{name: "body stalls past the timeout", response: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nslow", hang: true,
			want: Failure, wantErr: "context deadline exceeded (Client.Timeout or context cancellation while reading body)", wantReason: ReasonTimeout},
		{name: "breaks off after the 10 KiB read", response: "HTTP/1.1 200 OK\r\nContent-Length: 20000\r\n\r\n" + strings.Repeat("y", 12000),
			want: Success, wantOutput: strings.Repeat("y", MaxOutputLength)},
		{name: "chunked complete", response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
			want: Success, wantOutput: "hello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRawServer(t, func(c net.Conn) {
				readRequestHead(c)
				if _, err := c.Write([]byte(tc.response)); err != nil || !tc.hang {
					return
				}
				stall(c)
			})
			timeout := int32(10) // generous where the timeout is not the subject (a loaded CI machine)
			if tc.hang {
				timeout = 1
			}
			out, err := New(nil).Probe(context.Background(), httpProbe(t, s.URL(), "/", timeout), Target{})
			assert.Equal(t, tc.want, out.Result)
			assert.Equal(t, tc.wantReason, out.Reason)
			assert.Equal(t, tc.wantOutput, out.Output)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			var be *BodyError
			require.ErrorAs(t, err, &be)
			assert.Equal(t, tc.wantErr, err.Error())
		})
	}
}

// TestHTTPPathWithoutSlash: kubelet rebuilds the request from the URL's string form, so a path
// without a leading slash (which the API accepts) requests "/healthz", query kept.
func TestHTTPPathWithoutSlash(t *testing.T) {
	s := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(r.RequestURI)) }))
	for path, want := range map[string]string{"healthz": "/healthz", "healthz?x=1": "/healthz?x=1", "/a b": "/a%20b", "%zz": "/%25zz"} {
		out, err := New(nil).Probe(context.Background(), httpProbe(t, s.URL, path, 10), Target{})
		require.NoError(t, err)
		assert.Equal(t, Success, out.Result, "path %q: %s", path, out.Output)
		assert.Equal(t, want, out.Output, "path %q", path)
	}
}

// newH2Server starts a TLS server that offers h2 by ALPN and answers with the request's protocol;
// every connection state change is sent on the returned channel (buffered, never blocking the server).
func newH2Server(t *testing.T, h http.Handler) (*httptest.Server, <-chan http.ConnState) {
	t.Helper()
	states := make(chan http.ConnState, 64)
	s := httptest.NewUnstartedServer(h)
	s.EnableHTTP2 = true
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		select {
		case states <- st:
		default:
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s, states
}

func protoHandler(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(r.Proto)) }

// TestHTTPSNegotiatesHTTP2: HTTPS probes offer h2 by ALPN, as apimachinery's transport defaults do;
// DISABLE_HTTP2 (any non-empty value) is kubelet's opt-out; plain HTTP stays HTTP/1.1 (no h2c).
func TestHTTPSNegotiatesHTTP2(t *testing.T) {
	s, _ := newH2Server(t, http.HandlerFunc(protoHandler))
	plain := newServer(t, http.HandlerFunc(protoHandler))
	probe := func(url string) string {
		out, err := New(nil).Probe(context.Background(), httpProbe(t, url, "/", 10), Target{})
		require.NoError(t, err)
		require.Equal(t, Success, out.Result, out.Output)
		return out.Output
	}
	assert.Equal(t, "HTTP/2.0", probe(s.URL))
	assert.Equal(t, "HTTP/1.1", probe(plain.URL))
	t.Setenv(disableHTTP2Env, "1")
	assert.Equal(t, "HTTP/1.1", probe(s.URL), "DISABLE_HTTP2 is read when the Prober is made")
}

// An attempt builds kubelet's HTTP/2 set-up only for an https request: an http:// probe's transport
// offers no h2 (HTTP/2 is negotiated in TLS only, so it could not be used), and an http:// probe
// redirected to https on the same host, which kubelet follows, still negotiates HTTP/2 there, as
// kubelet's one transport does (the hop goes over the https transport, built then).
func TestHTTPAttemptBuildsHTTP2OnlyForHTTPS(t *testing.T) {
	cfg := New(nil).transport
	require.True(t, cfg.http2, "HTTP/2 is on by default (no DISABLE_HTTP2)")
	a := &transports{cfg: cfg}
	plain := a.forScheme("http")
	assert.Empty(t, plain.TLSNextProto, "no HTTP/2 set-up for http://")
	assert.Nil(t, a.tls, "nothing built for https before an https request")
	assert.Contains(t, a.forScheme("https").TLSNextProto, "h2", "kubelet's transport for https://")
	assert.Same(t, plain, a.forScheme("http"), "one transport per scheme per attempt")
	a.close()

	s, _ := newH2Server(t, http.HandlerFunc(protoHandler))
	redirect := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, s.URL+"/", http.StatusFound)
	}))
	out, err := New(nil).Probe(context.Background(), httpProbe(t, redirect.URL, "/", 10), Target{})
	require.NoError(t, err)
	require.Equal(t, Success, out.Result, out.Output)
	assert.Equal(t, "HTTP/2.0", out.Output, "the redirected hop negotiated HTTP/2")
}

// TestHTTP2Hygiene: over HTTP/2 the connection is still single-use (closed once the probe has its
// answer, nothing left idle) and the response header cap still holds.
func TestHTTP2Hygiene(t *testing.T) {
	big := strings.Repeat("h", 2*DefaultMaxResponseHeaderBytes)
	s, states := newH2Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Header().Set("X-Big", big)
		}
		protoHandler(w, r)
	}))
	p := New(nil)

	out, err := p.Probe(context.Background(), httpProbe(t, s.URL, "/", 10), Target{})
	require.NoError(t, err)
	require.Equal(t, "HTTP/2.0", out.Output)
	timeout := time.After(10 * time.Second)
	for closed := false; !closed; {
		select {
		case st := <-states:
			closed = st == http.StateClosed
		case <-timeout:
			t.Fatal("the HTTP/2 probe connection was not closed after the probe")
		}
	}

	out, err = p.Probe(context.Background(), httpProbe(t, s.URL, "/big", 10), Target{})
	require.NoError(t, err)
	assert.Equal(t, Failure, out.Result, out.Output)
	assert.Equal(t, ReasonProtocol, out.Reason, out.Output)
	assert.Less(t, len(out.Output), 1024)
}

// TestMaxResponseHeaderBytes: the response header cap is DefaultMaxResponseHeaderBytes unless
// WithMaxResponseHeaderBytes sets another (a non-positive n keeps the default); a header over the
// cap fails the probe as a protocol error, over HTTP/1.1 as over HTTP/2.
func TestMaxResponseHeaderBytes(t *testing.T) {
	header := strings.Repeat("h", 8<<10) // under the default cap, over a 4 KiB one
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Big", header) })
	h1 := newServer(t, h)
	h2, _ := newH2Server(t, h)
	for _, tc := range []struct {
		name string
		opts []Option
		want Result
	}{
		{"default", nil, Success},
		{"4 KiB", []Option{WithMaxResponseHeaderBytes(4 << 10)}, Failure},
		{"64 KiB set explicitly", []Option{WithMaxResponseHeaderBytes(64 << 10)}, Success},
		{"zero keeps the default", []Option{WithMaxResponseHeaderBytes(0)}, Success},
	} {
		for _, s := range []*httptest.Server{h1, h2} {
			t.Run(tc.name+"/"+map[bool]string{false: "HTTP/1.1", true: "HTTP/2"}[s == h2], func(t *testing.T) {
				out, err := New(nil, tc.opts...).Probe(context.Background(), httpProbe(t, s.URL, "/", 10), Target{})
				require.NoError(t, err)
				assert.Equal(t, tc.want, out.Result, out.Output)
				if tc.want == Failure {
					assert.Equal(t, ReasonProtocol, out.Reason, out.Output)
				}
			})
		}
	}
}
