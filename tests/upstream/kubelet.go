package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"reflect"
	"strings"
	"syscall"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/kubernetes/pkg/features"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	"k8s.io/kubernetes/pkg/probe"
	execprobe "k8s.io/kubernetes/pkg/probe/exec"
	grpcprobe "k8s.io/kubernetes/pkg/probe/grpc"
	httpprobe "k8s.io/kubernetes/pkg/probe/http"
	tcpprobe "k8s.io/kubernetes/pkg/probe/tcp"
	utilexec "k8s.io/utils/exec"
)

// MaxTries is kubelet's maxProbeRetries: an attempt is repeated while it returns an error.
const MaxTries = 3

// Attempt is what one probe execution (with kubelet's retries) reports: probe.Result's name
// ("success", "warning", "failure", "unknown"), the output text, the error text of the last try
// ("" for none) and how many tries were made.
type Attempt struct {
	Result string
	Output string
	Err    string
	Tries  int
}

// Retry is kubelet's runProbeWithRetries: try up to MaxTries times while try returns an error, and
// report the last try. Both implementations go through it, so a difference in retrying can only
// come from a difference in which attempts error.
func Retry(try func() (result, output string, err error)) Attempt {
	var a Attempt
	for a.Tries = 1; ; a.Tries++ {
		result, output, err := try()
		a = Attempt{Result: result, Output: output, Tries: a.Tries}
		if err == nil {
			return a
		}
		a.Err = err.Error()
		if a.Tries >= MaxTries {
			return a
		}
	}
}

// Kubelet drives upstream's pkg/probe/{exec,http,tcp,grpc} (k8s.io/kubernetes, the version pinned
// in go.mod) the way kubelet's pkg/kubelet/prober/prober.go does in v1.37 (newProber, runProbe,
// runProbeWithRetries, execInContainer), written from that file and from
// ../../../shared/spec/kubelet-prober.md §3.1: handler precedence exec, httpGet, tcpSocket, grpc;
// HTTP requests from httpprobe.NewRequestForHTTPGetAction with the pod IP as default host, sent with
// ProbeH2C when H2CContainerProbe is on and the probe's protocol is HTTP2; TCP ports through
// probe.ResolveContainerPort; a gRPC probe always aims at the pod IP, over TLS when
// GRPCContainerProbeTLS is on and its mode is TLS; the timeout is timeoutSeconds as given (the suite
// applies the API defaults first, as the API server does). Where prober.go reads
// utilfeature.DefaultFeatureGate, this reads its own copy of it (gates), so cases with different
// gates can run side by side.
type Kubelet struct {
	exec   execprobe.Prober
	http   httpprobe.Prober
	tcp    tcpprobe.Prober
	grpc   grpcprobe.Prober
	runner func(ctx context.Context, cmd []string, timeout time.Duration) ([]byte, error)
	gates  featuregate.FeatureGate
}

// NewKubelet returns kubelet's prober with followNonLocalRedirects false, as newProber builds it,
// under kubelet's default feature gates with gates (--feature-gates syntax, "" for none) applied.
// The HTTP transport reads DISABLE_HTTP2 here, as kubelet's does when its prober is made.
func NewKubelet(gates string) (*Kubelet, error) {
	g := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	if err := g.Set(gates); err != nil {
		return nil, err
	}
	return &Kubelet{
		exec:   execprobe.New(),
		http:   httpprobe.New(false),
		tcp:    tcpprobe.New(),
		grpc:   grpcprobe.New(),
		runner: RunInContainerCRI,
		gates:  g,
	}, nil
}

// Close ends what kubelet's HTTP transports still hold: kubelet's prober lives as long as kubelet and
// never closes them, but a test must not leave its dials running (a dial the attempt stopped
// waiting for goes on, see the "http-transport" difference). The transports are not exported by
// pkg/probe/http, so they are read from the prober's "transport" and "h2cTransport" fields; if
// upstream renames one, Close panics saying so.
func (k *Kubelet) Close() {
	for _, name := range []string{"transport", "h2cTransport"} {
		f := reflect.ValueOf(k.http).FieldByName(name)
		if !f.IsValid() || f.Type() != reflect.TypeOf((*http.Transport)(nil)) {
			panic(fmt.Sprintf("upstream's HTTP prober %T no longer has a %s *http.Transport field", k.http, name))
		}
		(*http.Transport)(unsafe.Pointer(f.Pointer())).CloseIdleConnections() //nolint:gosec // test glue reaching into upstream
	}
}

// Probe runs spec with retries against the container at podIP.
func (k *Kubelet) Probe(ctx context.Context, spec *v1.Probe, container v1.Container, podIP string) Attempt {
	return Retry(func() (string, string, error) {
		r, out, err := k.runProbe(ctx, spec, container, podIP)
		return string(r), out, err
	})
}

// runProbe is prober.go's runProbe.
func (k *Kubelet) runProbe(ctx context.Context, p *v1.Probe, container v1.Container, podIP string) (probe.Result, string, error) {
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	switch {
	case p.Exec != nil:
		cmd := kubecontainer.ExpandContainerCommandOnlyStatic(p.Exec.Command, container.Env)
		return k.exec.Probe(&execInContainer{run: func() ([]byte, error) { return k.runner(ctx, cmd, timeout) }})
	case p.HTTPGet != nil:
		req, err := httpprobe.NewRequestForHTTPGetAction(p.HTTPGet, &container, podIP, "probe")
		if err != nil {
			return probe.Unknown, "", err
		}
		if p.HTTPGet.Protocol != nil && *p.HTTPGet.Protocol == v1.HTTPProtocolHTTP2 &&
			k.gates.Enabled(features.H2CContainerProbe) {
			return k.http.ProbeH2C(req, timeout)
		}
		return k.http.Probe(req, timeout)
	case p.TCPSocket != nil:
		port, err := probe.ResolveContainerPort(p.TCPSocket.Port, &container)
		if err != nil {
			return probe.Unknown, "", err
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = podIP
		}
		return k.tcp.Probe(host, port, timeout)
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		useTLS := k.gates.Enabled(features.GRPCContainerProbeTLS) &&
			p.GRPC.Mode != nil && *p.GRPC.Mode == v1.GRPCProbeModeTLS
		return k.grpc.Probe(podIP, service, int(p.GRPC.Port), timeout, grpcprobe.ProbeOptions{UseTLS: useTLS})
	default:
		return probe.Unknown, "", fmt.Errorf("missing probe handler for %s", container.Name)
	}
}

// execInContainer is prober.go's adapter from a runtime's RunInContainer to utilexec.Cmd: the
// command runs in Start, and its whole output (stdout then stderr) is written to the prober's
// writer in one Write whose error — the 10 KiB limit — is only logged by kubelet, not returned.
type execInContainer struct {
	run    func() ([]byte, error)
	writer io.Writer
}

var _ utilexec.Cmd = (*execInContainer)(nil)

func (e *execInContainer) Run() error                      { return nil }
func (e *execInContainer) CombinedOutput() ([]byte, error) { return e.run() }
func (e *execInContainer) Output() ([]byte, error)         { return nil, errors.New("unimplemented") }
func (e *execInContainer) SetDir(string)                   {}
func (e *execInContainer) SetStdin(io.Reader)              {}
func (e *execInContainer) SetStdout(w io.Writer)           { e.writer = w }
func (e *execInContainer) SetStderr(w io.Writer)           { e.writer = w }
func (e *execInContainer) SetEnv([]string)                 {}
func (e *execInContainer) Stop()                           {}
func (e *execInContainer) Wait() error                     { return nil }
func (e *execInContainer) StdoutPipe() (io.ReadCloser, error) {
	return nil, errors.New("unimplemented")
}
func (e *execInContainer) StderrPipe() (io.ReadCloser, error) {
	return nil, errors.New("unimplemented")
}

func (e *execInContainer) Start() error {
	data, err := e.run()
	if e.writer != nil {
		_, _ = e.writer.Write(data) // kubelet logs this error and keeps the command's
	}
	return err
}

// RunInContainerCRI stands in for the container runtime behind kubelet's RunInContainer
// (kuberuntime: ExecSync, then stdout followed by stderr) with a local process, shaping its
// results the way k8s.io/cri-client's ExecSync does (pkg/remote_runtime.go, execSyncV1):
//   - a non-zero exit is utilexec.CodeExitError{"command '<cmd>' exited with <n>: <stderr>", n};
//   - the runtime's deadline is "command timed out: \"<cmd>\" timed out after <timeout>"
//     (remote.ErrCommandTimedOut), the command and its process group killed first;
//   - a command that cannot be started is an error that is not an exit status, as containerd
//     reports it (a gRPC error from ExecSync: "OCI runtime exec failed: … executable file not
//     found"), so kubelet's exec prober returns it as a probe error.
//
// It keeps the whole output, as a runtime does; the exec prober applies kubelet's 10 KiB limit.
func RunInContainerCRI(ctx context.Context, cmd []string, timeout time.Duration) ([]byte, error) {
	if len(cmd) == 0 {
		return nil, errors.New("exec failed: no command")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	c := exec.Command(cmd[0], cmd[1:]...) //nolint:gosec // running the probe's command is the point
	c.Stdout, c.Stderr = &stdout, &stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.WaitDelay = 100 * time.Millisecond
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("OCI runtime exec failed: exec failed: unable to start container process: %w", err)
	}
	// The watchdog ends when the command does or once it has killed the group.
	exited := make(chan struct{})
	watchdog := make(chan struct{})
	go func() {
		defer close(watchdog)
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		case <-exited:
		}
	}()
	err := c.Wait()
	close(exited)
	<-watchdog
	_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) // whatever the command left behind
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("%w: %q timed out after %s", remote.ErrCommandTimedOut, strings.Join(cmd, " "), timeout)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() != 0 {
		return append(stdout.Bytes(), stderr.Bytes()...), utilexec.CodeExitError{
			Err:  fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), ee.ExitCode(), stderr.Bytes()),
			Code: ee.ExitCode(),
		}
	}
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return nil, err
	}
	return append(stdout.Bytes(), stderr.Bytes()...), nil
}
