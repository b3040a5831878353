package probes

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/features"
)

// selfSignedCert is a throw-away certificate for 127.0.0.1 that nothing trusts.
func selfSignedCert(t testing.TB) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "probe target"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// startGRPCServer serves the health service (everything SERVING) on 127.0.0.1:0, over TLS with a
// self-signed certificate when tlsOn, until the test ends.
func startGRPCServer(t testing.TB, tlsOn bool) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var opts []grpc.ServerOption
	if tlsOn {
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{selfSignedCert(t)}})))
	}
	s := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(s, health.NewServer())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ln) }() // ends with Stop
	t.Cleanup(func() { s.Stop(); <-done })
	return ln.Addr().(*net.TCPAddr).Port
}

// protoEcho answers with the protocol and path it was asked with, then echoHandler's text.
func protoEcho(w http.ResponseWriter, r *http.Request) {
	_, _ = io.WriteString(w, r.Proto+" "+r.URL.Path+"\n")
	echoHandler(w, r)
}

// startH2CServer serves protoEcho over HTTP/1.1 and, when h2c, HTTP/2 in cleartext with prior
// knowledge too, until the test ends.
func startH2CServer(t testing.TB, h2c bool) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(http.HandlerFunc(protoEcho))
	s.Config.Protocols = new(http.Protocols)
	s.Config.Protocols.SetHTTP1(true)
	s.Config.Protocols.SetUnencryptedHTTP2(h2c)
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func protocol(p v1.HTTPProtocol) *v1.HTTPProtocol { return &p }
func mode(m v1.GRPCProbeMode) *v1.GRPCProbeMode   { return &m }

// TestH2CProbeFollowsItsGate: httpGet.protocol HTTP2 speaks h2c (prior knowledge) only with
// H2CContainerProbe on; off, the field is ignored as kubelet ignores it.
func TestH2CProbeFollowsItsGate(t *testing.T) {
	h2cTarget := startH2CServer(t, true)
	http1Target := startH2CServer(t, false)
	on := features.MustParse("H2CContainerProbe=true")
	for _, tc := range []struct {
		name     string
		gates    features.Gates
		target   *httptest.Server
		protocol *v1.HTTPProtocol
		want     Result
		contains string
	}{
		{"gate on, HTTP2: h2c", on, h2cTarget, protocol(v1.HTTPProtocolHTTP2), Success, "HTTP/2.0 /healthz\n"},
		{"gate on, HTTP2, kubelet's User-Agent", on, h2cTarget, protocol(v1.HTTPProtocolHTTP2), Success, "User-Agent: " + UserAgent + "\n"},
		{"gate on, HTTP1", on, h2cTarget, protocol(v1.HTTPProtocolHTTP1), Success, "HTTP/1.1 /healthz\n"},
		{"gate on, no protocol", on, h2cTarget, nil, Success, "HTTP/1.1 /healthz\n"},
		{"gate off, HTTP2 ignored", features.Gates{}, h2cTarget, protocol(v1.HTTPProtocolHTTP2), Success, "HTTP/1.1 /healthz\n"},
		{"gate on, HTTP2 to an HTTP/1.1-only target", on, http1Target, protocol(v1.HTTPProtocolHTTP2), Failure, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := httpProbe(t, tc.target.URL, "/healthz", 5)
			spec.HTTPGet.Protocol = tc.protocol
			out, err := New(nil, WithFeatureGates(tc.gates)).Probe(context.Background(), spec, Target{PodIP: "127.0.0.1"})
			require.NoError(t, err)
			assert.Equal(t, tc.want, out.Result, "output %q", out.Output)
			assert.Contains(t, out.Output, tc.contains)
		})
	}
}

// TestGRPCTLSProbeFollowsItsGate: grpc.mode TLS connects over TLS without verification only with
// GRPCContainerProbeTLS on; off, the probe stays plaintext (and so fails against a TLS server).
func TestGRPCTLSProbeFollowsItsGate(t *testing.T) {
	tlsPort := startGRPCServer(t, true)
	plainPort := startGRPCServer(t, false)
	on := features.MustParse("GRPCContainerProbeTLS=true")
	for _, tc := range []struct {
		name     string
		gates    features.Gates
		port     int
		mode     *v1.GRPCProbeMode
		want     Result
		contains string
	}{
		{"gate on, TLS to a TLS server (self-signed)", on, tlsPort, mode(v1.GRPCProbeModeTLS), Success, "service healthy"},
		{"gate on, Plaintext to a plaintext server", on, plainPort, mode(v1.GRPCProbeModePlaintext), Success, "service healthy"},
		{"gate on, no mode to a plaintext server", on, plainPort, nil, Success, "service healthy"},
		{"gate on, TLS to a plaintext server", on, plainPort, mode(v1.GRPCProbeModeTLS), Failure, "timeout: failed to connect service"},
		{"gate on, plaintext to a TLS server", on, tlsPort, nil, Failure, "timeout: failed to connect service"},
		{"gate off, TLS ignored: plaintext to a TLS server", features.Gates{}, tlsPort, mode(v1.GRPCProbeModeTLS), Failure, "timeout: failed to connect service"},
		{"gate off, TLS ignored: plaintext to a plaintext server", features.Gates{}, plainPort, mode(v1.GRPCProbeModeTLS), Success, "service healthy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := grpcProbe(tc.port, nil, 2)
			spec.GRPC.Mode = tc.mode
			out, err := New(nil, WithFeatureGates(tc.gates)).Probe(context.Background(), spec, Target{PodIP: "127.0.0.1"})
			require.NoError(t, err)
			assert.Equal(t, tc.want, out.Result, "output %q", out.Output)
			assert.Contains(t, out.Output, tc.contains)
		})
	}
}
