package nodeobject

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strings"

	"github.com/probeactor/probeactor/internal/procfs"
)

// Host is what Build reports of the machine, as kubelet 1.37 reads it (through cadvisor).
type Host struct {
	Hostname string // os.Hostname, trimmed and lowercased (CanonicalHostname)
	CPUs     int    // online CPUs (procfs.Capacity)
	Memory   int64  // MemTotal, bytes
	// MachineID is /etc/machine-id, else /var/lib/dbus/machine-id; SystemUUID
	// /sys/class/dmi/id/product_uuid (readable by root only on most machines); BootID
	// /proc/sys/kernel/random/boot_id: each "" when unreadable, as cadvisor leaves them.
	MachineID, SystemUUID, BootID string
	KernelVersion                 string // /proc/sys/kernel/osrelease (uname -r); "Unknown" when unreadable
	OSImage                       string // OSImage's
}

// The files ReadHost reads.
var (
	machineIDFiles = []string{"/etc/machine-id", "/var/lib/dbus/machine-id"}
	systemUUIDFile = "/sys/class/dmi/id/product_uuid"
	bootIDFile     = "/proc/sys/kernel/random/boot_id"
	osreleaseFile  = "/proc/sys/kernel/osrelease"
	osReleaseFiles = []string{"/etc/os-release", "/usr/lib/os-release"}
)

// ReadHost reads this machine. Only the hostname, the CPUs and the memory are required (kubelet
// cannot start without them either); what else cannot be read is left as cadvisor leaves it.
func ReadHost() (Host, error) {
	name, err := os.Hostname()
	if err != nil {
		return Host{}, fmt.Errorf("couldn't determine hostname: %w", err)
	}
	var h Host
	if h.Hostname, err = CanonicalHostname(name); err != nil {
		return Host{}, err
	}
	cpus, memory, err := procfs.Capacity()
	if err != nil {
		return Host{}, err
	}
	h.CPUs, h.Memory = cpus, int64(memory)
	h.MachineID = firstFile(machineIDFiles...)
	h.SystemUUID = firstFile(systemUUIDFile)
	h.BootID = firstFile(bootIDFile)
	if h.KernelVersion = firstFile(osreleaseFile); h.KernelVersion == "" {
		h.KernelVersion = "Unknown"
	}
	h.OSImage = OSImage(readFirst(osReleaseFiles...))
	return h, nil
}

// CanonicalHostname is kubelet's (component-helpers' GetHostname): trimmed, lowercased, not
// empty.
func CanonicalHostname(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", errors.New("empty hostname is invalid")
	}
	return strings.ToLower(name), nil
}

// firstFile is the first of paths that can be read, trimmed; "" if none can.
func firstFile(paths ...string) string {
	b, err := readFirst(paths...)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// readFirst reads the first of paths that exists (cadvisor reads /usr/lib/os-release only when
// /etc/os-release does not exist); the last error if none can be read.
func readFirst(paths ...string) ([]byte, error) {
	err := error(fs.ErrNotExist)
	for _, p := range paths {
		var b []byte
		if b, err = os.ReadFile(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return b, err
		}
	}
	return nil, err
}

// prettyName is cadvisor's: the first PRETTY_NAME=... anywhere in the file.
var prettyName = regexp.MustCompile(`(PRETTY_NAME)=(.*)`)

// OSImage is status.nodeInfo.osImage from os-release's content, as cadvisor's
// ContainerOsVersion: its PRETTY_NAME without double quotes, "Linux" when it has none, "Unknown"
// when there is no os-release to read (err).
func OSImage(osRelease []byte, err error) string {
	if err != nil {
		return "Unknown"
	}
	if m := prettyName.FindStringSubmatch(string(osRelease)); m != nil {
		return strings.Trim(m[2], `"`)
	}
	return "Linux"
}
