package proc

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// A unix socket's address holds at most 107 bytes of path, and a --root-dir may be longer than
// that leaves room for. So the shim's socket is bound and dialled through a descriptor of its
// directory: "/proc/self/fd/<n>/<name>" is short whatever the directory's path, and the kernel
// resolves it to the same file. The descriptor is held only for the bind or the connect.

// inDir runs fn with a short path that names the file base in dir.
func inDir(path string, fn func(short string) error) error {
	dir, base := filepath.Split(path)
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open socket directory %s: %w", dir, err)
	}
	defer unix.Close(fd)
	return fn("/proc/self/fd/" + strconv.Itoa(fd) + "/" + base)
}

// listenSocket creates the unix socket path (mode 0600) and listens on it. The listener does not
// remove the file when closed; its owner does (removeSocket).
func listenSocket(path string) (*net.UnixListener, error) {
	var l *net.UnixListener
	err := inDir(path, func(short string) error {
		var err error
		l, err = net.ListenUnix("unix", &net.UnixAddr{Name: short, Net: "unix"})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	l.SetUnlinkOnClose(false)
	if err := unix.Chmod(path, 0o600); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return l, nil
}

// dialSocket connects to the unix socket path.
func dialSocket(path string) (*net.UnixConn, error) {
	var c *net.UnixConn
	err := inDir(path, func(short string) error {
		var err error
		c, err = net.DialUnix("unix", nil, &net.UnixAddr{Name: short, Net: "unix"})
		return err
	})
	return c, err
}
