package probes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probeactor/probeactor/internal/sysfault"
)

// withDial makes every connect of the Prober return what dial returns (a kernel refusing it).
func withDial(dial func(ctx context.Context, network, address string) (net.Conn, error)) Option {
	return func(p *Prober) { p.dialer.dial = dial }
}

// refuseDial fails every connect with errno as Go reports it from the syscall that failed.
func refuseDial(errno syscall.Errno) func(context.Context, string, string) (net.Conn, error) {
	syscallName := "socket"
	if errno == syscall.EADDRNOTAVAIL || errno == syscall.EAGAIN || errno == syscall.ECONNREFUSED ||
		errno == syscall.ECONNRESET || errno == syscall.ETIMEDOUT || errno == syscall.ENETUNREACH {
		syscallName = "connect"
	}
	return func(_ context.Context, network, address string) (net.Conn, error) {
		addr, _ := net.ResolveTCPAddr(network, address)
		return nil, &net.OpError{Op: "dial", Net: network, Addr: addr, Err: os.NewSyscallError(syscallName, errno)}
	}
}

func TestExhaustedClassification(t *testing.T) {
	wrap := func(e syscall.Errno) error {
		return fmt.Errorf("get: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", e)})
	}
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.EADDRNOTAVAIL, syscall.EAGAIN} {
		assert.True(t, exhausted(wrap(e)), "%v is the prober's own", e)
		assert.True(t, exhausted(&os.PathError{Op: "fork/exec", Path: "/bin/true", Err: e}), "%v from fork", e)
	}
	for _, err := range []error{
		nil, wrap(syscall.ECONNREFUSED), wrap(syscall.ECONNRESET), wrap(syscall.ETIMEDOUT), wrap(syscall.EHOSTUNREACH),
		wrap(syscall.ENETUNREACH), wrap(syscall.EPIPE), context.DeadlineExceeded, io.EOF, io.ErrUnexpectedEOF,
		&os.PathError{Op: "fork/exec", Path: "/nope", Err: syscall.ENOENT}, errors.New("too many open files"),
	} {
		assert.False(t, exhausted(err), "%v is the target's (or not an errno)", err)
	}
}

// TestOwnExhaustionIsAProbeError: a connect the kernel refuses the prober itself — each of the
// errnos, for HTTP, HTTPS, TCP and gRPC — is a probe error wrapping ErrExhausted and the errno,
// result Unknown, reason Exhausted, no output; what a target does stays a Failure.
func TestOwnExhaustionIsAProbeError(t *testing.T) {
	specs := map[string]*v1.Probe{
		"http":  {TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt(8080), Path: "/"}}},
		"https": {TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt(8443), Path: "/", Scheme: v1.URISchemeHTTPS}}},
		"tcp":   tcpProbe("", 8080, 1),
		"grpc":  grpcProbe(9090, nil, 1),
	}
	target := Target{PodIP: "127.0.0.1"}
	for _, errno := range ownResourceErrnos {
		for name, spec := range specs {
			t.Run(fmt.Sprintf("%s %s", name, errno), func(t *testing.T) {
				t.Parallel()
				out, err := New(nil, withDial(refuseDial(errno))).Probe(context.Background(), spec, target)
				require.ErrorIs(t, err, ErrExhausted)
				require.ErrorIs(t, err, errno)
				assert.Equal(t, Unknown, out.Result)
				assert.Equal(t, ReasonExhausted, out.Reason)
				assert.Empty(t, out.Output)
				assert.Contains(t, err.Error(), "prober out of resources: ")
			})
		}
	}
	for _, errno := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ETIMEDOUT, syscall.ENETUNREACH} {
		for name, spec := range specs {
			t.Run(fmt.Sprintf("target %s %s", name, errno), func(t *testing.T) {
				t.Parallel()
				out, err := New(nil, withDial(refuseDial(errno))).Probe(context.Background(), spec, target)
				require.NoError(t, err)
				assert.Equal(t, Failure, out.Result)
				assert.NotEqual(t, ReasonExhausted, out.Reason)
			})
		}
	}
}

// TestExecStartExhaustion: an exec command that cannot be started for want of a process slot,
// memory or descriptors (fork/exec EAGAIN, ENOMEM, EMFILE, ENFILE) is a probe error wrapping
// ErrExhausted; a runner that cannot run the command for another reason is a plain probe error, a
// program that does not exist a Failure (exit 127).
func TestExecStartExhaustion(t *testing.T) {
	spec := execProbe(1, "true")
	runner := func(start func(*exec.Cmd) error) LocalRunner {
		return LocalRunner{Resolve: func(string) (LocalOptions, error) { return LocalOptions{start: start}, nil }}
	}
	for _, errno := range []syscall.Errno{syscall.EAGAIN, syscall.ENOMEM, syscall.EMFILE, syscall.ENFILE} {
		t.Run(errno.Error(), func(t *testing.T) {
			fork := func(c *exec.Cmd) error { return &os.PathError{Op: "fork/exec", Path: c.Path, Err: errno} }
			out, err := New(runner(fork)).Probe(context.Background(), spec, Target{ContainerID: "proc://x"})
			require.ErrorIs(t, err, ErrExhausted)
			require.ErrorIs(t, err, errno)
			assert.Equal(t, Unknown, out.Result)
			assert.Equal(t, ReasonExhausted, out.Reason)
		})
	}
	t.Run("runner cannot start", func(t *testing.T) {
		gone := LocalRunner{Resolve: func(id string) (LocalOptions, error) { return LocalOptions{}, errors.New("no such container") }}
		out, err := New(gone).Probe(context.Background(), spec, Target{ContainerID: "proc://x"})
		require.Error(t, err)
		assert.NotErrorIs(t, err, ErrExhausted)
		assert.Equal(t, Unknown, out.Result)
		assert.Equal(t, ReasonError, out.Reason)
	})
	t.Run("missing program", func(t *testing.T) {
		out, err := New(nil).Probe(context.Background(), execProbe(1, "/no/such/program"), Target{})
		require.NoError(t, err)
		assert.Equal(t, Failure, out.Result)
	})
}

// exhaustEnv makes the test binary a prober out of descriptors (see TestMain): it lowers its own
// RLIMIT_NOFILE below the descriptors it holds, probes the target at the variable's value (a
// loopback port) by TCP, HTTP, gRPC and exec, and prints one line per probe.
const exhaustEnv = "PROBES_TEST_EXHAUST"

// runExhausted is the helper's body.
func runExhausted(port string) {
	p, err := strconv.Atoi(port)
	if err != nil {
		fmt.Println("setup:", err)
		return
	}
	if _, err := sysfault.DenyNewDescriptors(); err != nil {
		fmt.Println("setup:", err)
		return
	}
	target := Target{PodIP: "127.0.0.1"}
	prober := New(nil)
	for _, c := range []struct {
		name string
		spec *v1.Probe
	}{
		{"tcp", tcpProbe("127.0.0.1", p, 1)},
		{"http", &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt(p), Path: "/"}}}},
		{"grpc", grpcProbe(p, nil, 1)},
		{"exec", execProbe(1, "true")},
	} {
		out, err := prober.Probe(context.Background(), c.spec, target)
		fmt.Printf("%s result=%s reason=%s exhausted=%v emfile=%v error=%v\n", c.name, out.Result, out.Reason,
			errors.Is(err, ErrExhausted), errors.Is(err, syscall.EMFILE), err)
	}
}

// TestRealDescriptorExhaustion: with no descriptor left (the test binary re-executed with its
// RLIMIT_NOFILE below what it holds), every kind of probe is an ErrExhausted probe error carrying
// EMFILE — the real kernel errors, not an injected dial — while the target is perfectly healthy.
func TestRealDescriptorExhaustion(t *testing.T) {
	s := newServer(t, statusHandler(200))
	_, port := hostPort(t, s.URL)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", exhaustEnv, port))
	// Only stdout holds the probes' lines: the runtime's own complaints (with -cover, that it cannot
	// write its coverage files without descriptors) go to stderr, shown on failure.
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	require.NoError(t, err, "%s%s", b, stderr.Bytes())
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 4, "%s%s", b, stderr.Bytes())
	for _, l := range lines {
		assert.Contains(t, l, " result=unknown reason=Exhausted exhausted=true emfile=true ", l)
	}
}
