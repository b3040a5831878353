package remotesec

import (
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probeactor/probeactor/actors/logging"
	"github.com/probeactor/probeactor/internal/logtest"
	"github.com/probeactor/probeactor/remotesec/remotesectest"
)

func newSystem(t *testing.T) *actor.ActorSystem {
	return actor.NewActorSystem(logging.SystemOption(logtest.New(t)), actor.WithDeadLetterThrottleInterval(10*time.Millisecond))
}

func TestStartRefusesUnsafeOrBrokenConfigurations(t *testing.T) {
	ca := remotesectest.NewCA(t, "fleet")
	member := ca.Issue(t, "member", "127.0.0.1")
	tlsCfg, err := LoadTLS(member.Cert, member.Key, member.CA)
	require.NoError(t, err)
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"non-loopback without TLS", Config{Listen: "10.1.2.3:0"}, "is not loopback: configure mutual TLS (--tls-cert-file, --tls-private-key-file, --client-ca-file)"},
		{"every interface without TLS", Config{Listen: ":10257"}, "is not loopback"},
		{"every interface without an advertised address", Config{Listen: "0.0.0.0:0", TLS: tlsCfg}, "give the address peers dial"},
		{"a certificate that does not name the advertised host", Config{Listen: "0.0.0.0:0", Advertise: "10.0.0.7:10257", TLS: tlsCfg}, "the certificate does not name the advertised host 10.0.0.7"},
		{"no port", Config{Listen: "127.0.0.1"}, `remote listen address "127.0.0.1"`},
		{"a port out of range", Config{Listen: "127.0.0.1:70000"}, `port "70000" is not a number from 0 to 65535`},
		{"a bad advertised address", Config{Listen: "127.0.0.1:0", Advertise: "nohost"}, `advertised address "nohost": want host:port`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Start(newSystem(t), tc.cfg)
			assert.ErrorContains(t, err, tc.want)
			_, err = configure(newSystem(t), tc.cfg)
			assert.ErrorContains(t, err, tc.want, "configure validates as Start does")
		})
	}
}

func TestConfigureCarriesTheGuardAndTheSettings(t *testing.T) {
	rc, err := configure(newSystem(t), Config{Listen: "127.0.0.1:7101", Advertise: "localhost:7101"})
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", rc.Host)
	assert.Equal(t, 7101, rc.Port)
	assert.Equal(t, "localhost:7101", rc.AdvertisedHost)
	assert.Equal(t, WriterQueueSize, rc.EndpointWriterQueueSize)
	assert.NotEmpty(t, rc.ServerOptions, "the guard's interceptors, credentials, bounds and keepalives")
	assert.NotEmpty(t, rc.DialOptions)
}

func TestStartReportsABusyAddressInsteadOfPanicking(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, err = Start(newSystem(t), Config{Listen: ln.Addr().String()})
	assert.ErrorContains(t, err, "failed to listen")
}

func TestLoadTLSNamesTheFlag(t *testing.T) {
	ca := remotesectest.NewCA(t, "fleet")
	good := ca.Issue(t, "member", "127.0.0.1")
	serverOnly := ca.IssueServerOnly(t, "server", "127.0.0.1")
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("not pem"), 0o600))

	cfg, err := LoadTLS("", "", "")
	assert.NoError(t, err)
	assert.Nil(t, cfg, "no flags: no TLS")
	for _, tc := range []struct {
		name            string
		cert, key, ca   string
		want            string
		wantTLSVersions bool
	}{
		{"only a certificate", good.Cert, "", "", "--tls-cert-file, --tls-private-key-file and --client-ca-file go together", false},
		{"a missing key file", good.Cert, "/nonexistent/key.pem", good.CA, "--tls-private-key-file /nonexistent/key.pem", false},
		{"a CA file without certificates", good.Cert, good.Key, garbage, "--client-ca-file " + garbage + ": no PEM certificate", false},
		{"a missing CA file", good.Cert, good.Key, "/nonexistent/ca.pem", "--client-ca-file /nonexistent/ca.pem", false},
		{"a server-only certificate", serverOnly.Cert, serverOnly.Key, serverOnly.CA, "must allow both serverAuth and clientAuth", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadTLS(tc.cert, tc.key, tc.ca)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	cfg, err = LoadTLS(good.Cert, good.Key, good.CA)
	require.NoError(t, err)
	assert.Equal(t, uint16(0x0304), cfg.Server.MinVersion, "TLS 1.3")
	assert.Equal(t, uint16(0x0304), cfg.Client.MinVersion)
	assert.Equal(t, "RequireAndVerifyClientCert", cfg.Server.ClientAuth.String())
}

func TestPeerAddressMustBeThePeers(t *testing.T) {
	loop := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 40000}
	for host, ok := range map[string]bool{"127.0.0.1": true, "localhost": true, "127.0.0.2": false, "10.1.2.3": false, "example.com": false} {
		err := sameHost(host, loop)
		assert.Equal(t, ok, err == nil, "%s: %v", host, err)
	}
	v6 := &net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 1}
	assert.NoError(t, sameHost("127.0.0.1", v6), "an IPv4-mapped peer")
}

// protoactor's graceful shutdown panics when an endpoint reader closed its disconnect channel
// just before the manager signals it; Stop must finish with a hard stop instead of crashing the
// process, and must not hide any other panic.
func TestStopSurvivesProtoactorsSendOnAClosedReaderChannel(t *testing.T) {
	var calls []bool
	recovered := 0
	onRecover := func(cut bool) {
		assert.False(t, cut, "not a timeout")
		recovered++
	}
	require.NotPanics(t, func() {
		stop(func(graceful bool) {
			calls = append(calls, graceful)
			if graceful {
				ch := make(chan bool, 1)
				close(ch)
				ch <- true // the very panic protoactor's endpointManager.stop raises
			}
		}, time.Minute, onRecover)
	})
	assert.Equal(t, []bool{true, false}, calls, "a graceful attempt, then the hard stop of the gRPC server")
	assert.Equal(t, 1, recovered, "the fallback is reported")

	calls = nil
	stop(func(graceful bool) { calls = append(calls, graceful) }, time.Minute, onRecover)
	assert.Equal(t, []bool{true}, calls, "a graceful shutdown that succeeds is the only call")

	assert.PanicsWithValue(t, "boom", func() { stop(func(bool) { panic("boom") }, time.Minute, onRecover) }, "other panics propagate")
	var nilMap map[string]int
	assert.Panics(t, func() {
		stop(func(graceful bool) {
			if graceful {
				nilMap["x"] = 1 // a runtime error that is not the known one
			}
		}, time.Minute, onRecover)
	})
	assert.Equal(t, 1, recovered, "only the known panic is recovered")
}

// A graceful shutdown that does not return within the wait (protoactor's reader left a peer's
// stream open, so gRPC's graceful stop waits for it) is cut short by the hard stop, which is what
// ends it; the cut is reported.
func TestStopCutsAGracefulShutdownThatHangs(t *testing.T) {
	hard := make(chan struct{})
	var mu sync.Mutex
	var calls []bool
	cuts := 0
	stop(func(graceful bool) {
		mu.Lock()
		calls = append(calls, graceful)
		mu.Unlock()
		if graceful {
			<-hard // until the hard stop closes the stream it waits for
			return
		}
		close(hard)
	}, 10*time.Millisecond, func(cut bool) {
		assert.True(t, cut)
		cuts++
	})
	assert.Equal(t, []bool{true, false}, calls, "the graceful attempt, then the hard stop that ends it")
	assert.Equal(t, 1, cuts)
}
