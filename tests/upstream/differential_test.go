package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	execprobe "k8s.io/kubernetes/pkg/probe/exec"
	utilexec "k8s.io/utils/exec"

	"github.com/probeactor/probeactor/features"
	"github.com/probeactor/probeactor/internal/sysfault"
	"github.com/probeactor/probeactor/probes"
)

// Named expectations. Every deliberate difference from upstream and every upstream misbehaviour the
// project decided about has an ID here, tagged "(suite: <id>)" in probes/doc.go; TestDocListsEveryID
// keeps the two lists equal, and every ID is used by at least one case or says which test covers it.
var (
	// differences: the two implementations are expected to disagree, each side as its case says.
	differences = map[string]string{
		"abortive-close": "probe sockets are closed with RST (no TIME_WAIT); kubelet's SO_LINGER 1 s close sends FIN",
		"header-cap":     "response headers over 64 KiB fail the probe (HTTP/1.1 and HTTP/2); upstream reads up to Go's default 10 MiB",
		"exec-start-failure": "a command that cannot be started is exit 127/126, a Failure (RunLocal, as a shell in a container); " +
			"through containerd kubelet gets an ExecSync error, a probe error that is retried and discarded",
		"no-handler-text": "a probe without a handler errors naming the container only; the Prober is not told the pod",
		"http-transport": "each attempt has its own transport, closed with it: a dial the attempt stopped waiting for is canceled; " +
			"kubelet's shared transport lets it run on (a black-holed target: until the kernel gives up, ~2 min). " +
			"The HTTP/2 pool side is covered by tests/probehygiene TestHTTP2ProbeHygiene",
		"own-exhaustion": "a connect the kernel refuses the prober itself (EMFILE, ...) is a probe error, retried and discarded; " +
			"kubelet makes it a Failure, so a node out of descriptors restarts every probed container",
		"exec-process-group": "covered by probes TestRunLocal*: RunLocal kills the command's process group; here the runtime is a stand-in on both sides",
	}
	// quirks: upstream misbehaves; the decision is stated and the case checks it.
	quirks = map[string]string{
		"stalled-body-errors": "kept: a body that stalls past the timeout is a probe error in both (so such a target never fails liveness)",
		"h2c-error-race": "kept: against a target that does not speak HTTP/2, net/http's HTTP/2 client reports one of two errors " +
			"(\"frame too large … looked like an HTTP/1.1 header\" or \"client conn could not be established\"), whichever of its reader " +
			"and its round trip gets there first, in both implementations alike: the case checks the Failure, not which text",
		"utilexec-big-output": "not followed: driving pkg/probe/exec with k8s.io/utils/exec, output over 10 KiB fails its LimitWriter " +
			"and the copy: a probe error (\"short write\") or a SIGPIPE Failure; kubelet's own execInContainer and probeactor " +
			"keep the command's verdict and its first 10 KiB",
	}
)

// want is one side's expected attempt: its result, whether it errored (after kubelet's 3 tries),
// and text the output or error must contain ("" checks nothing).
type want struct {
	result   string
	errored  bool
	contains string
}

// probeCase is one probe against one live target. Without diff both implementations must report
// the same Attempt (result, output, error text, tries), which must match want. With diff (an ID
// in differences or quirks) each side must match its own expectation.
type probeCase struct {
	name      string
	gates     string // kubelet's --feature-gates for both sides ("" = 1.37.2's defaults)
	spec      *v1.Probe
	container v1.Container
	want      want
	diff      string
	kubelet   want // when diff is set
	ours      want // when diff is set
	// observe, when set, runs before and after each side's attempt and reports what the target or
	// the system saw (the returned function is called after the attempt); the case then expects
	// kubeletSaw and oursSaw. Observed cases run one at a time.
	observe             func(t *testing.T, tg *targets) (after func() string)
	kubeletSaw, oursSaw string
}

const podIP = "127.0.0.1"

func ok(contains string) want   { return want{result: "success", contains: contains} }
func fail(contains string) want { return want{result: "failure", contains: contains} }
func warn(contains string) want { return want{result: "warning", contains: contains} }
func errored(result, contains string) want {
	return want{result: result, errored: true, contains: contains}
}

// timeouts: cases that are not about the timeout get a generous one, so a loaded CI machine cannot
// turn them into timeouts; the slow cases use 1 s.
const (
	roomy = 5
	tight = 1
)

func httpGet(port intstr.IntOrString, path string, timeout int32, headers ...v1.HTTPHeader) *v1.Probe {
	return &v1.Probe{TimeoutSeconds: timeout, ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{
		Port: port, Path: path, HTTPHeaders: headers}}}
}

func httpsGet(port int, path string, timeout int32) *v1.Probe {
	p := httpGet(intstr.FromInt(port), path, timeout)
	p.HTTPGet.Scheme = v1.URISchemeHTTPS
	return p
}

func tcpSocket(host string, port intstr.IntOrString, timeout int32) *v1.Probe {
	return &v1.Probe{TimeoutSeconds: timeout, ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Host: host, Port: port}}}
}

func grpcCheck(port int, service *string, timeout int32) *v1.Probe {
	return &v1.Probe{TimeoutSeconds: timeout, ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: int32(port), Service: service}}}
}

func execCmd(timeout int32, cmd ...string) *v1.Probe {
	return &v1.Probe{TimeoutSeconds: timeout, ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: cmd}}}
}

func hdr(name, value string) v1.HTTPHeader { return v1.HTTPHeader{Name: name, Value: value} }

// h2cGet is httpGet with protocol HTTP2 (h2c when H2CContainerProbe is on).
func h2cGet(port int, path string, timeout int32) *v1.Probe {
	p := httpGet(intstr.FromInt(port), path, timeout)
	h2 := v1.HTTPProtocolHTTP2
	p.HTTPGet.Protocol = &h2
	return p
}

// grpcMode is grpcCheck with grpc.mode set (TLS when GRPCContainerProbeTLS is on).
func grpcMode(port int, service *string, timeout int32, mode v1.GRPCProbeMode) *v1.Probe {
	p := grpcCheck(port, service, timeout)
	p.GRPC.Mode = &mode
	return p
}

// Feature gates of the cases that need them (kubelet 1.37.2: both alpha, off by default).
const (
	h2cOn     = "H2CContainerProbe=true"
	grpcTLSOn = "GRPCContainerProbeTLS=true"
)

func str(s string) *string { return &s }

func cases(t *testing.T, tg *targets) []probeCase {
	p := intstr.FromInt
	web := v1.Container{Name: "web", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: int32(tg.httpPort)}}}
	notExecutable := filepath.Join(t.TempDir(), "not-executable")
	require.NoError(t, os.WriteFile(notExecutable, []byte("#!/bin/sh\nexit 0\n"), 0o644))
	raw := func(name, path string) *v1.Probe { return httpGet(p(tg.raw[name]), path, roomy) }
	sh := func(script string) *v1.Probe { return execCmd(roomy, "sh", "-c", script) }

	return []probeCase{
		// HTTP: status classes.
		{name: "http 200", spec: httpGet(p(tg.httpPort), "/status/200", roomy), want: ok("status body")},
		{name: "http 204", spec: httpGet(p(tg.httpPort), "/status/204", roomy), want: ok("")},
		{name: "http 299", spec: httpGet(p(tg.httpPort), "/status/299", roomy), want: ok("status body")},
		{name: "http 304 not followed", spec: httpGet(p(tg.httpPort), "/status/304", roomy), want: warn("Probe terminated redirects, Response body: ")},
		{name: "http 399", spec: httpGet(p(tg.httpPort), "/status/399", roomy), want: warn("Probe terminated redirects, Response body: status body")},
		{name: "http 400", spec: httpGet(p(tg.httpPort), "/status/400", roomy), want: fail("HTTP probe failed with statuscode: 400")},
		{name: "http 404", spec: httpGet(p(tg.httpPort), "/status/404", roomy), want: fail("HTTP probe failed with statuscode: 404")},
		{name: "http 500 body left out", spec: httpGet(p(tg.httpPort), "/status/500", roomy), want: fail("HTTP probe failed with statuscode: 500")},
		{name: "http 503", spec: httpGet(p(tg.httpPort), "/status/503", roomy), want: fail("HTTP probe failed with statuscode: 503")},
		{name: "http 599 raw", spec: raw("status-599", "/"), want: fail("HTTP probe failed with statuscode: 599")},
		{name: "http handler aborts", spec: httpGet(p(tg.httpPort), "/panic", roomy), want: fail("EOF")},

		// HTTP: redirects.
		{name: "redirect same host 302 to 200", spec: httpGet(p(tg.httpPort), "/redirect/same", roomy), want: ok("status body")},
		{name: "redirect 301 to 204", spec: httpGet(p(tg.httpPort), "/redirect/301", roomy), want: ok("")},
		{name: "redirect 307 to 500", spec: httpGet(p(tg.httpPort), "/redirect/307-to-500", roomy), want: fail("statuscode: 500")},
		{name: "redirect 308 to 404", spec: httpGet(p(tg.httpPort), "/redirect/308-to-404", roomy), want: fail("statuscode: 404")},
		{name: "redirect to another host is a warning", spec: httpGet(p(tg.httpPort), "/redirect/other-host", roomy),
			want: warn("Probe terminated redirects, Response body: <a href=")},
		{name: "redirect same hostname other port and scheme is followed", spec: httpGet(p(tg.httpPort), "/redirect/other-port", roomy),
			want: ok("HTTP/1.1 /from-redirect")},
		{name: "redirect loop", spec: httpGet(p(tg.httpPort), "/redirect/loop", roomy), want: fail("stopped after 10 redirects")},
		{name: "redirect without location", spec: httpGet(p(tg.httpPort), "/redirect/no-location", roomy),
			want: warn("Probe terminated redirects, Response body: moved somewhere")},

		// HTTP: bodies.
		{name: "body over 10 KiB truncated", spec: httpGet(p(tg.httpPort), "/big", roomy), want: ok(strings.Repeat("b", probes.MaxOutputLength))},
		{name: "500 with a big body", spec: httpGet(p(tg.httpPort), "/big500", roomy), want: fail("HTTP probe failed with statuscode: 500")},
		{name: "body until close", spec: raw("no-length", "/"), want: ok("until close")},
		{name: "chunked body", spec: raw("chunked", "/"), want: ok("hello world")},
		{name: "body short of its content-length", spec: raw("short-body", "/"), want: errored("failure", "unexpected EOF")},
		{name: "500 with a short body", spec: raw("short-body-500", "/"), want: errored("failure", "unexpected EOF")},
		{name: "chunked body cut before the last chunk", spec: raw("chunk-cut", "/"), want: errored("failure", "unexpected EOF")},
		{name: "body cut after the 10 KiB read", spec: raw("cut-after-limit", "/"), want: ok(strings.Repeat("y", probes.MaxOutputLength))},
		{name: "reset mid-body", spec: raw("reset-mid-body", "/"), want: errored("failure", "connection reset by peer")},

		// HTTP: slow targets.
		{name: "headers slower than the timeout", spec: httpGet(p(tg.httpPort), "/slow/headers", tight),
			want: fail("(Client.Timeout exceeded while awaiting headers)")},
		{name: "body slower than the timeout", spec: httpGet(p(tg.httpPort), "/slow/body", tight), diff: "stalled-body-errors",
			kubelet: errored("failure", "(Client.Timeout or context cancellation while reading body)"),
			ours:    errored("failure", "(Client.Timeout or context cancellation while reading body)")},
		{name: "connect hangs past the timeout", spec: httpGet(p(tg.hangPort), "/", tight), diff: "http-transport",
			kubelet: fail("Client.Timeout exceeded"), ours: fail("Client.Timeout exceeded"),
			observe: pendingDials(tg.hangPort), kubeletSaw: "the dial goes on", oursSaw: "the dial ended"},
		{name: "accepts and never answers", spec: httpGet(p(tg.silentPort), "/", tight), want: fail("Client.Timeout exceeded while awaiting headers")},

		// HTTP: garbage and old protocols.
		{name: "garbage response", spec: raw("garbage", "/"), want: fail("malformed HTTP response")},
		{name: "malformed status code", spec: raw("bad-status-code", "/"), want: fail("malformed HTTP status code")},
		{name: "HTTP/1.0 response", spec: raw("http10", "/"), want: ok("hello from 1.0")},
		{name: "HTTP/1.0 404", spec: raw("http10-404", "/"), want: fail("statuscode: 404")},
		{name: "close without a response", spec: raw("close-no-response", "/"), want: fail("EOF")},
		{name: "reset without a response", spec: raw("reset-no-response", "/"), want: fail("connection reset by peer")},
		{name: "connection refused", spec: httpGet(p(tg.closedPort), "/", roomy), want: fail("connect: connection refused")},

		// HTTP: headers.
		{name: "default headers", spec: httpGet(p(tg.httpPort), "/", roomy),
			want: ok("Accept: */*\nConnection: close\nUser-Agent: kube-probe/1.37\n")},
		{name: "custom header, canonicalized and repeated", spec: httpGet(p(tg.httpPort), "/", roomy, hdr("x-custom", "a"), hdr("X-CUSTOM", "b")),
			want: ok("X-Custom: a\nX-Custom: b\n")},
		{name: "host header", spec: httpGet(p(tg.httpPort), "/", roomy, hdr("Host", "muffins.example")), want: ok("Host: muffins.example\n")},
		{name: "user agent replaced", spec: httpGet(p(tg.httpPort), "/", roomy, hdr("User-Agent", "custom/9")), want: ok("User-Agent: custom/9\n")},
		{name: "user agent removed by empty value", spec: httpGet(p(tg.httpPort), "/", roomy, hdr("User-Agent", "")), want: ok("Connection: close\n")},
		{name: "accept replaced", spec: httpGet(p(tg.httpPort), "/", roomy, hdr("Accept", "application/json")), want: ok("Accept: application/json\n")},
		{name: "accept removed by empty value", spec: httpGet(p(tg.httpPort), "/", roomy, hdr("Accept", "")), want: ok("Connection: close\n")},
		{name: "accept-encoding only when asked", spec: httpGet(p(tg.httpPort), "/", roomy, hdr("Accept-Encoding", "gzip")), want: ok("Accept-Encoding: gzip\n")},
		{name: "fair response header (32 KiB)", spec: httpGet(p(tg.httpPort), "/header/ok", roomy), want: ok("fair header")},
		{name: "response header over 64 KiB", spec: httpGet(p(tg.httpPort), "/header/big", roomy), diff: "header-cap",
			kubelet: ok("big header"), ours: fail("server response headers exceeded 65536 bytes")},

		// HTTP: ports, hosts, paths and queries.
		{name: "named port", spec: httpGet(intstr.FromString("http"), "/", roomy), container: web, want: ok("HTTP/1.1 /\n")},
		// kubelet ≤1.36 read a name no port has as a number; 1.37 does not (the API refuses such a name).
		{name: "numeric string port", spec: httpGet(intstr.FromString(strconv.Itoa(tg.httpPort)), "/", roomy),
			want: errored("unknown", `port "`+strconv.Itoa(tg.httpPort)+`" not found`)},
		{name: "unknown port name", spec: httpGet(intstr.FromString("nope"), "/", roomy), container: web,
			want: errored("unknown", `port "nope" not found`)},
		{name: "port out of range", spec: httpGet(p(70000), "/", roomy), want: errored("unknown", "invalid port number: 70000")},
		{name: "host field", spec: func() *v1.Probe { s := httpGet(p(tg.httpPort), "/", roomy); s.HTTPGet.Host = "localhost"; return s }(),
			want: ok("Host: localhost:" + strconv.Itoa(tg.httpPort) + "\n")},
		{name: "query string", spec: httpGet(p(tg.httpPort), "/healthz?verbose=1&x=a%20b", roomy), want: ok("HTTP/1.1 /healthz?verbose=1&x=a%20b\n")},
		{name: "query without a path", spec: httpGet(p(tg.httpPort), "?only=query", roomy), want: ok("HTTP/1.1 /?only=query\n")},
		{name: "path without a leading slash", spec: httpGet(p(tg.httpPort), "healthz", roomy), want: ok("HTTP/1.1 /healthz\n")},
		{name: "path with a space", spec: httpGet(p(tg.httpPort), "/a b", roomy), want: ok("HTTP/1.1 /a%20b\n")},
		{name: "path with a bad escape", spec: httpGet(p(tg.httpPort), "/%zz", roomy), want: ok("HTTP/1.1 /%25zz\n")},
		{name: "path that looks like a host", spec: httpGet(p(tg.httpPort), "//elsewhere.example/x", roomy), want: ok("HTTP/1.1 /x\n")},

		// HTTPS.
		{name: "https self-signed", spec: httpsGet(tg.httpsPort, "/", roomy), want: ok("HTTP/1.1 /\n")},
		{name: "https negotiates HTTP/2", spec: httpsGet(tg.h2Port, "/h2", roomy), want: ok("HTTP/2.0 /h2\n")},
		{name: "https HTTP/2 default headers", spec: httpsGet(tg.h2Port, "/", roomy), want: ok("Accept: */*\nUser-Agent: kube-probe/1.37\n")},
		{name: "https HTTP/2 header over 64 KiB", spec: httpsGet(tg.h2Port, "/header/big", roomy), diff: "header-cap",
			kubelet: ok("HTTP/2.0 /header/big"), ours: fail("COMPRESSION_ERROR")},
		{name: "https to a plain HTTP server", spec: httpsGet(tg.httpPort, "/", roomy), want: fail("server gave HTTP response to HTTPS client")},
		{name: "http to an HTTPS server", spec: httpGet(p(tg.httpsPort), "/", roomy), want: fail("statuscode: 400")},

		// h2c (H2CContainerProbe, alpha in 1.37): httpGet.protocol HTTP2 is HTTP/2 with prior knowledge.
		{name: "h2c", gates: h2cOn, spec: h2cGet(tg.h2cPort, "/h2c", roomy), want: ok("HTTP/2.0 /h2c\n")},
		{name: "h2c default headers", gates: h2cOn, spec: h2cGet(tg.h2cPort, "/", roomy), want: ok("Accept: */*\nUser-Agent: kube-probe/1.37\n")},
		{name: "h2c custom headers and host", gates: h2cOn, spec: func() *v1.Probe {
			s := h2cGet(tg.h2cPort, "/", roomy)
			s.HTTPGet.HTTPHeaders = []v1.HTTPHeader{hdr("Host", "muffins.example"), hdr("x-custom", "a")}
			return s
		}(), want: ok("Host: muffins.example\n")},
		{name: "h2c status 503", gates: h2cOn, spec: h2cGet(tg.h2cPort, "/status/503", roomy), want: fail("HTTP probe failed with statuscode: 503")},
		{name: "h2c redirect same host", gates: h2cOn, spec: h2cGet(tg.h2cPort, "/redirect/same", roomy), want: ok("status body")},
		{name: "h2c redirect to HTTPS", gates: h2cOn, spec: h2cGet(tg.h2cPort, "/redirect/other-port", roomy), want: fail("")},
		{name: "h2c body over 10 KiB truncated", gates: h2cOn, spec: h2cGet(tg.h2cPort, "/big", roomy), want: ok(strings.Repeat("b", probes.MaxOutputLength))},
		{name: "h2c headers slower than the timeout", gates: h2cOn, spec: h2cGet(tg.h2cPort, "/slow/headers", tight),
			want: fail("(Client.Timeout exceeded while awaiting headers)")},
		{name: "h2c to an HTTP/1.1 server", gates: h2cOn, spec: h2cGet(tg.raw["http11-to-preface"], "/", roomy), diff: "h2c-error-race",
			kubelet: fail("Get \"http://127.0.0.1:"), ours: fail("Get \"http://127.0.0.1:")},
		{name: "h2c to an HTTP/1.1-only server that closes", gates: h2cOn, spec: h2cGet(tg.httpPort, "/", roomy), diff: "h2c-error-race",
			kubelet: fail("http2: "), ours: fail("http2: ")},
		{name: "h2c refused", gates: h2cOn, spec: h2cGet(tg.closedPort, "/", roomy), want: fail("connect: connection refused")},
		{name: "h2c response header over 64 KiB", gates: h2cOn, spec: h2cGet(tg.h2cPort, "/header/big", roomy), diff: "header-cap",
			kubelet: ok("big header"), ours: fail("")},
		{name: "h2c gate off: HTTP/1.1", spec: h2cGet(tg.h2cPort, "/h1", roomy), want: ok("HTTP/1.1 /h1\n")},
		{name: "h2c gate on, protocol HTTP1", gates: h2cOn, spec: func() *v1.Probe {
			s := h2cGet(tg.h2cPort, "/h1", roomy)
			h1 := v1.HTTPProtocolHTTP1
			s.HTTPGet.Protocol = &h1
			return s
		}(), want: ok("HTTP/1.1 /h1\n")},

		// TCP.
		{name: "tcp open", spec: tcpSocket("", p(tg.httpPort), roomy), want: ok("")},
		{name: "tcp refused", spec: tcpSocket("", p(tg.closedPort), roomy), want: fail("connect: connection refused")},
		{name: "tcp connect timeout", spec: tcpSocket("", p(tg.hangPort), tight), want: fail("i/o timeout")},
		{name: "tcp host field", spec: tcpSocket("localhost", p(tg.httpPort), roomy), want: ok("")},
		{name: "tcp named port", spec: tcpSocket("", intstr.FromString("http"), roomy), container: web, want: ok("")},
		{name: "tcp numeric string port", spec: tcpSocket("", intstr.FromString(strconv.Itoa(tg.httpPort)), roomy),
			want: errored("unknown", `port "`+strconv.Itoa(tg.httpPort)+`" not found`)},
		{name: "tcp unknown port name", spec: tcpSocket("", intstr.FromString("nope"), roomy), container: web,
			want: errored("unknown", `port "nope" not found`)},
		{name: "tcp close", spec: tcpSocket("", p(tg.closeKindsPort), roomy), diff: "abortive-close",
			kubelet: ok(""), ours: ok(""),
			observe:    func(t *testing.T, tg *targets) func() string { return func() string { return tg.closeKinds.next(t) } },
			kubeletSaw: "EOF", oursSaw: "reset"},

		// gRPC.
		{name: "grpc serving", spec: grpcCheck(tg.grpcPort, nil, roomy), want: ok("service healthy")},
		{name: "grpc service serving", spec: grpcCheck(tg.grpcPort, str(""), roomy), want: ok("service healthy")},
		{name: "grpc not serving", spec: grpcCheck(tg.grpcPort, str("not-serving"), roomy), want: fail(`service unhealthy (responded with "NOT_SERVING")`)},
		{name: "grpc unknown status", spec: grpcCheck(tg.grpcPort, str("unknown-status"), roomy), want: fail(`service unhealthy (responded with "UNKNOWN")`)},
		{name: "grpc service unknown status", spec: grpcCheck(tg.grpcPort, str("service-unknown"), roomy), want: fail(`service unhealthy (responded with "SERVICE_UNKNOWN")`)},
		{name: "grpc unknown service", spec: grpcCheck(tg.grpcPort, str("nope"), roomy),
			want: fail("error: health rpc probe failed: rpc error: code = NotFound desc = unknown service")},
		{name: "grpc internal error", spec: grpcCheck(tg.grpcPort, str("internal"), roomy),
			want: fail("error: health rpc probe failed: rpc error: code = Internal desc = health store is on fire")},
		{name: "grpc unimplemented", spec: grpcCheck(tg.grpcNoHealth, nil, roomy),
			want: fail("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health")},
		{name: "grpc slow", spec: grpcCheck(tg.grpcPort, str("slow"), tight), want: fail("timeout: health rpc did not complete within 1s")},
		{name: "grpc non-gRPC server", spec: grpcCheck(tg.httpPort, nil, tight), want: fail("within 1s: context deadline exceeded")},
		{name: "grpc refused", spec: grpcCheck(tg.closedPort, nil, tight), want: fail("within 1s: context deadline exceeded")},
		{name: "grpc never answers", spec: grpcCheck(tg.silentPort, nil, tight), want: fail("within 1s: context deadline exceeded")},

		// gRPC over TLS (GRPCContainerProbeTLS, alpha in 1.37): grpc.mode TLS, the certificate unverified.
		{name: "grpc TLS serving", gates: grpcTLSOn, spec: grpcMode(tg.grpcTLSPort, nil, roomy, v1.GRPCProbeModeTLS), want: ok("service healthy")},
		{name: "grpc TLS not serving", gates: grpcTLSOn, spec: grpcMode(tg.grpcTLSPort, str("not-serving"), roomy, v1.GRPCProbeModeTLS),
			want: fail(`service unhealthy (responded with "NOT_SERVING")`)},
		{name: "grpc TLS unknown service", gates: grpcTLSOn, spec: grpcMode(tg.grpcTLSPort, str("nope"), roomy, v1.GRPCProbeModeTLS),
			want: fail("code = NotFound desc = unknown service")},
		{name: "grpc TLS to a plaintext server", gates: grpcTLSOn, spec: grpcMode(tg.grpcPort, nil, tight, v1.GRPCProbeModeTLS),
			want: fail("within 1s: context deadline exceeded")},
		{name: "grpc plaintext to a TLS server", gates: grpcTLSOn, spec: grpcCheck(tg.grpcTLSPort, nil, tight),
			want: fail("within 1s: context deadline exceeded")},
		{name: "grpc mode Plaintext", gates: grpcTLSOn, spec: grpcMode(tg.grpcPort, nil, roomy, v1.GRPCProbeModePlaintext), want: ok("service healthy")},
		{name: "grpc TLS refused", gates: grpcTLSOn, spec: grpcMode(tg.closedPort, nil, tight, v1.GRPCProbeModeTLS),
			want: fail("within 1s: context deadline exceeded")},
		{name: "grpc TLS gate off: plaintext to a TLS server", spec: grpcMode(tg.grpcTLSPort, nil, tight, v1.GRPCProbeModeTLS),
			want: fail("within 1s: context deadline exceeded")},
		{name: "grpc TLS gate off: plaintext to a plaintext server", spec: grpcMode(tg.grpcPort, nil, roomy, v1.GRPCProbeModeTLS),
			want: ok("service healthy")},

		// Exec.
		{name: "exec true", spec: execCmd(roomy, "true"), want: ok("")},
		{name: "exec output", spec: sh("echo healthy"), want: ok("healthy\n")},
		{name: "exec exit 1", spec: execCmd(roomy, "false"), want: fail("")},
		{name: "exec exit 2 with output", spec: sh("echo sick; exit 2"), want: fail("sick\n")},
		{name: "exec exit 255", spec: sh("exit 255"), want: fail("")},
		{name: "exec stderr only", spec: sh("echo oops >&2; exit 3"), want: fail("oops\n")},
		{name: "exec stdout then stderr", spec: sh("echo err >&2; echo out"), want: ok("out\nerr\n")},
		{name: "exec big output", spec: sh("head -c 20000 /dev/zero | tr '\\0' x"), want: ok(strings.Repeat("x", probes.MaxOutputLength))},
		{name: "exec big stdout and stderr", spec: sh("head -c 8000 /dev/zero | tr '\\0' o; head -c 8000 /dev/zero | tr '\\0' e >&2"),
			want: ok(strings.Repeat("o", 8000) + strings.Repeat("e", probes.MaxOutputLength-8000))},
		{name: "exec killed by a signal", spec: sh("kill -9 $$"), want: fail("")},
		{name: "exec env expansion", spec: execCmd(roomy, "echo", "$(GREETING)", "$(MISSING)", "$$(GREETING)"),
			container: v1.Container{Name: "c", Env: []v1.EnvVar{{Name: "GREETING", Value: "hi"}}}, want: ok("hi $(MISSING) $(GREETING)\n")},
		{name: "exec shell cannot find the command", spec: sh("no-such-command-here"), want: fail("not found")},
		{name: "exec timeout", spec: execCmd(tight, "sleep", "5"), want: fail(`command timed out: "sleep 5" timed out after 1s`)},
		{name: "exec missing binary", spec: execCmd(roomy, "/no/such/binary"), diff: "exec-start-failure",
			kubelet: errored("unknown", "no such file or directory"), ours: fail("no such file or directory")},
		{name: "exec not executable", spec: execCmd(roomy, notExecutable), diff: "exec-start-failure",
			kubelet: errored("unknown", "permission denied"), ours: fail("permission denied")},

		// No handler.
		{name: "no handler", spec: &v1.Probe{TimeoutSeconds: roomy}, container: v1.Container{Name: "c"}, diff: "no-handler-text",
			kubelet: errored("unknown", "missing probe handler for c"), ours: errored("unknown", `missing probe handler for container "c"`)},
	}
}

// sides returns kubelet's prober and probeactor's under the same feature gates (kubelet's
// --feature-gates syntax, on kubelet 1.37.2's defaults), kubelet's closed when the test ends.
func sides(t *testing.T, gates string) (*Kubelet, *probes.Prober) {
	t.Helper()
	k, err := NewKubelet(gates)
	require.NoError(t, err)
	t.Cleanup(k.Close)
	g, err := features.Parse(gates)
	require.NoError(t, err)
	return k, probes.New(nil, probes.WithFeatureGates(g))
}

func utilexecCommand(name string, args ...string) utilexec.Cmd {
	return utilexec.New().Command(name, args...)
}

// ours runs spec through probes.Prober with kubelet's retries.
func ours(ctx context.Context, p *probes.Prober, spec *v1.Probe, c v1.Container) Attempt {
	target := probes.Target{Container: &c, PodIP: podIP}
	return Retry(func() (string, string, error) {
		out, err := p.Probe(ctx, spec, target)
		return out.Result.String(), out.Output, err
	})
}

// ephemeral matches the probe's own (random) port in a transport error ("read tcp
// 127.0.0.1:37070->127.0.0.1:33237: …"): two attempts never share it, so it is masked before the
// texts are compared.
var ephemeral = regexp.MustCompile(`(\d+\.\d+\.\d+\.\d+):\d+->`)

func normalize(a Attempt) Attempt {
	a.Output = ephemeral.ReplaceAllString(a.Output, "$1:<ephemeral>->")
	a.Err = ephemeral.ReplaceAllString(a.Err, "$1:<ephemeral>->")
	return a
}

// short keeps assertion messages readable when an output is 10 KiB.
func short(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func check(t *testing.T, side string, a Attempt, w want) {
	t.Helper()
	assert.Equal(t, w.result, a.Result, "%s: result (output %q, error %q)", side, short(a.Output), a.Err)
	assert.Equal(t, w.errored, a.Err != "", "%s: errored (error %q)", side, a.Err)
	if w.errored {
		assert.Equal(t, MaxTries, a.Tries, "%s: an error is tried %d times", side, MaxTries)
		assert.Empty(t, short(a.Output), "%s: kubelet's errors carry no output", side)
	}
	assert.True(t, strings.Contains(a.Output+a.Err, w.contains), "%s: output %q / error %q should contain %q",
		side, short(a.Output), a.Err, short(w.contains))
}

// TestDifferential probes every case's live target through upstream kubelet's probe code and
// through probes.Prober, and compares what each reports.
func TestDifferential(t *testing.T) {
	tg := newTargets(t)
	all := cases(t, tg)
	require.GreaterOrEqual(t, len(all), 60, "the suite promises at least 60 cases")
	kubelets, probers := map[string]*Kubelet{}, map[string]*probes.Prober{}
	for _, tc := range all {
		if _, ok := kubelets[tc.gates]; !ok {
			kubelets[tc.gates], probers[tc.gates] = sides(t, tc.gates)
		}
	}
	for _, tc := range all {
		kubelet, prober := kubelets[tc.gates], probers[tc.gates]
		t.Run(tc.name, func(t *testing.T) {
			if tc.observe == nil {
				t.Parallel()
			}
			spec := tc.spec.DeepCopy()
			probes.SetProbeDefaults(spec) // the API server's defaults, as both would see the pod
			ctx := context.Background()
			var kubeletSaw, oursSaw string
			run := func(side func() Attempt, saw *string) Attempt {
				if tc.observe == nil {
					return normalize(side())
				}
				after := tc.observe(t, tg)
				a := normalize(side())
				*saw = after()
				return a
			}
			k := run(func() Attempt { return kubelet.Probe(ctx, spec, tc.container, podIP) }, &kubeletSaw)
			o := run(func() Attempt { return ours(ctx, prober, spec, tc.container) }, &oursSaw)
			if tc.diff == "" {
				if !assert.Equal(t, k.Result, o.Result, "the implementations disagree") ||
					!assert.Equal(t, k.Err, o.Err, "the implementations disagree") ||
					!assert.Equal(t, k.Tries, o.Tries, "the implementations disagree") ||
					!assert.True(t, k.Output == o.Output, "the implementations disagree: kubelet output %q, probeactor %q",
						short(k.Output), short(o.Output)) {
					return
				}
				check(t, "both", k, tc.want)
				return
			}
			_, isDiff := differences[tc.diff]
			_, isQuirk := quirks[tc.diff]
			require.True(t, isDiff || isQuirk, "unknown expectation %q", tc.diff)
			check(t, "kubelet", k, tc.kubelet)
			check(t, "probeactor", o, tc.ours)
			assert.Equal(t, tc.kubeletSaw, kubeletSaw, "what kubelet's attempt left behind")
			assert.Equal(t, tc.oursSaw, oursSaw, "what probeactor's attempt left behind")
		})
	}
}

// TestUtilexecBigOutputQuirk: upstream's exec prober writes a command's output through a 10 KiB
// LimitWriter that fails the write past it. Driven by k8s.io/utils/exec (a local os/exec command,
// as some wrappers do) that failure stops the output copy: a command that then exits 0 (here it
// ignores SIGPIPE) becomes a probe error ("short write"), one still writing dies of SIGPIPE (a
// Failure) — the verdict depends on the output's size, not the command. Driven the way kubelet
// does (execInContainer: one Write whose error is only logged) the verdict stands. The project
// follows kubelet's own path.
func TestUtilexecBigOutputQuirk(t *testing.T) {
	require.Contains(t, quirks, "utilexec-big-output")
	script := "trap '' PIPE; head -c 20000 /dev/zero | tr '\\0' x; exit 0"
	spec := execCmd(roomy, "sh", "-c", script)
	probes.SetProbeDefaults(spec)

	viaUtilexec := Retry(func() (string, string, error) {
		r, out, err := execprobe.New().Probe(utilexecCommand("sh", "-c", script))
		return string(r), out, err
	})
	check(t, "upstream through k8s.io/utils/exec", viaUtilexec, errored("unknown", "short write"))

	kubelet, prober := sides(t, "")
	k := kubelet.Probe(context.Background(), spec, v1.Container{}, podIP)
	o := ours(context.Background(), prober, spec, v1.Container{})
	assert.Equal(t, k, o)
	check(t, "kubelet's execInContainer and probeactor", k, ok(strings.Repeat("x", probes.MaxOutputLength)))
}

// TestDisableHTTP2: DISABLE_HTTP2 (any non-empty value), read when the prober is made, keeps HTTPS
// probes on HTTP/1.1 in both.
func TestDisableHTTP2(t *testing.T) {
	tg := newTargets(t)
	t.Setenv("DISABLE_HTTP2", "true")
	spec := httpsGet(tg.h2Port, "/", roomy)
	probes.SetProbeDefaults(spec)
	kubelet, prober := sides(t, "")
	k := kubelet.Probe(context.Background(), spec, v1.Container{}, podIP)
	o := ours(context.Background(), prober, spec, v1.Container{})
	assert.Equal(t, k, o)
	check(t, "both", k, ok("HTTP/1.1 /\n"))
}

// TestDocListsEveryID: probes/doc.go tags every deliberate difference and decided upstream quirk
// "(suite: <id>)"; the IDs there are exactly this suite's, and every ID is either used by a case or
// names the test that covers it.
func TestDocListsEveryID(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "probes", "doc.go"))
	require.NoError(t, err)
	var inDoc []string
	for _, m := range regexp.MustCompile(`\(suite: ([a-z0-9-]+)\)`).FindAllStringSubmatch(string(doc), -1) {
		inDoc = append(inDoc, m[1])
	}
	var here []string
	for id := range differences {
		here = append(here, id)
	}
	for id := range quirks {
		here = append(here, id)
	}
	slices.Sort(inDoc)
	slices.Sort(here)
	assert.Equal(t, here, slices.Compact(inDoc), "probes/doc.go and this suite must name the same differences")

	used := map[string]bool{"utilexec-big-output": true, "own-exhaustion": true} // TestUtilexecBigOutputQuirk, TestOwnExhaustion
	for _, tc := range cases(t, newTargets(t)) {
		used[tc.diff] = true
	}
	for id, why := range differences {
		if !used[id] {
			assert.True(t, strings.HasPrefix(why, "covered by "), "difference %q is neither used by a case nor says what covers it", id)
		}
	}
	for id := range quirks {
		assert.True(t, used[id], "quirk %q has no case", id)
	}
}

// exhaustEnv makes the suite's binary a prober out of descriptors (see TestMain and TestOwnExhaustion).
const exhaustEnv = "UPSTREAM_TEST_EXHAUST"

// runExhausted lowers this process's RLIMIT_NOFILE below the descriptors it holds and probes the
// loopback port given by TCP and HTTP through both implementations, printing each Attempt as JSON.
func runExhausted(port string) {
	p, err := strconv.Atoi(port)
	if err != nil {
		fmt.Println("setup:", err)
		return
	}
	kubelet, err := NewKubelet("")
	if err != nil {
		fmt.Println("setup:", err)
		return
	}
	prober := probes.New(nil)
	if _, err := sysfault.DenyNewDescriptors(); err != nil {
		fmt.Println("setup:", err)
		return
	}
	for _, spec := range []*v1.Probe{tcpSocket("", intstr.FromInt(p), roomy), httpGet(intstr.FromInt(p), "/", roomy)} {
		probes.SetProbeDefaults(spec)
		for _, a := range []Attempt{kubelet.Probe(context.Background(), spec, v1.Container{}, podIP), ours(context.Background(), prober, spec, v1.Container{})} {
			b, _ := json.Marshal(normalize(a))
			fmt.Println(string(b))
		}
	}
}

// TestOwnExhaustion: a prober that cannot open a single descriptor (this binary re-executed with
// its RLIMIT_NOFILE below what it holds) probing a healthy target: kubelet reports a Failure — a
// liveness probe would restart the container — where probeactor reports a probe error.
func TestOwnExhaustion(t *testing.T) {
	require.Contains(t, differences, "own-exhaustion")
	tg := newTargets(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", exhaustEnv, tg.httpPort))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 4, "%s", out)
	for i, l := range lines {
		var a Attempt
		require.NoError(t, json.Unmarshal([]byte(l), &a), l)
		if i%2 == 0 {
			check(t, "kubelet", a, fail("socket: too many open files"))
		} else {
			check(t, "probeactor", a, errored("unknown", "prober out of resources: "))
			assert.Contains(t, a.Err, "socket: too many open files")
		}
	}
}
