package sysfault

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// DenyNewDescriptors lowers this process's soft RLIMIT_NOFILE to its lowest free descriptor, so
// every descriptor it tries to open from now on fails with EMFILE while those it holds keep
// working. It first makes sure the Go runtime's network poller exists (it needs a descriptor of its
// own, and a runtime that cannot create it aborts). It returns a function restoring the limit.
func DenyNewDescriptors() (restore func() error, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // the poller, created while it still can be
	if err != nil {
		return nil, fmt.Errorf("deny new descriptors: %w", err)
	}
	_ = ln.Close()
	f, err := os.Open(os.DevNull)
	if err != nil {
		return nil, fmt.Errorf("deny new descriptors: %w", err)
	}
	lowest := f.Fd() // every new descriptor would be this one or above it
	_ = f.Close()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		return nil, fmt.Errorf("deny new descriptors: %w", err)
	}
	lowered := old
	lowered.Cur = uint64(lowest)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
		return nil, fmt.Errorf("deny new descriptors: %w", err)
	}
	return func() error { return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) }, nil
}

// HangingPort returns a loopback port whose connects hang until the caller gives up, as an
// unreachable or overloaded target's do: a listener with backlog 0 that never accepts, its accept
// queue filled first, so Linux drops further SYNs instead of refusing them. close releases the
// listener and the connections that filled its queue.
func HangingPort() (port int, close func(), err error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, nil, fmt.Errorf("hanging port: %w", err)
	}
	listener := os.NewFile(uintptr(fd), "hanging-listener")
	var fill []net.Conn
	close = func() {
		for _, c := range fill {
			_ = c.Close()
		}
		_ = listener.Close()
	}
	fail := func(err error) (int, func(), error) {
		close()
		return 0, nil, fmt.Errorf("hanging port: %w", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fail(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		return fail(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return fail(err)
	}
	port = sa.(*syscall.SockaddrInet4).Port
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	for range 64 { // with backlog 0 Linux queues one connection; a few more to be sure
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			return port, close, nil
		}
		if err != nil {
			return fail(err)
		}
		fill = append(fill, c)
	}
	return fail(fmt.Errorf("connects to %s never started to hang", addr))
}

// RefusingPort returns a loopback port that refuses every connect and that no other process can take
// while it is held (a bound socket that does not listen: a closed listener's port could be reused by
// anyone). close releases it.
func RefusingPort() (port int, close func(), err error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, nil, fmt.Errorf("refusing port: %w", err)
	}
	f := os.NewFile(uintptr(fd), "refusing-port")
	close = func() { _ = f.Close() }
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		close()
		return 0, nil, fmt.Errorf("refusing port: %w", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		close()
		return 0, nil, fmt.Errorf("refusing port: %w", err)
	}
	return sa.(*syscall.SockaddrInet4).Port, close, nil
}
