package nodeobject

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadHostReadsThisMachine: this machine's facts, each sane.
func TestReadHostReadsThisMachine(t *testing.T) {
	h, err := ReadHost()
	require.NoError(t, err)
	name, err := os.Hostname()
	require.NoError(t, err)
	assert.Equal(t, strings.ToLower(strings.TrimSpace(name)), h.Hostname)
	assert.GreaterOrEqual(t, h.CPUs, runtime.NumCPU())
	assert.Greater(t, h.Memory, int64(64<<20), "more than 64 MiB")
	assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`), h.BootID)
	release, err := os.ReadFile("/proc/sys/kernel/osrelease")
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(string(release)), h.KernelVersion)
	assert.NotEmpty(t, h.OSImage)
	if b, err := os.ReadFile("/etc/machine-id"); err == nil {
		assert.Equal(t, strings.TrimSpace(string(b)), h.MachineID)
	}
	assert.NotContains(t, h.SystemUUID, "\n")
}

func TestOSImage(t *testing.T) {
	for _, tc := range []struct {
		content string
		err     error
		want    string
	}{
		{"NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n", nil, "Debian GNU/Linux 12 (bookworm)"},
		{"PRETTY_NAME=Alpine\n", nil, "Alpine"},
		{"PRETTY_NAME='Single quoted'\n", nil, "'Single quoted'"}, // cadvisor trims double quotes only
		{"NAME=Something\nID=x\n", nil, "Linux"},
		{"", fs.ErrNotExist, "Unknown"},
	} {
		assert.Equal(t, tc.want, OSImage([]byte(tc.content), tc.err), tc.content)
	}
}

func TestCanonicalHostname(t *testing.T) {
	name, err := CanonicalHostname("  Web-01.Example.COM\n")
	require.NoError(t, err)
	assert.Equal(t, "web-01.example.com", name)
	_, err = CanonicalHostname(" \t")
	assert.EqualError(t, err, "empty hostname is invalid")
}

// readFirst goes on to the next file only when one does not exist, as cadvisor reads
// /usr/lib/os-release; firstFile trims and leaves "" when none can be read.
func TestReadFirst(t *testing.T) {
	dir := t.TempDir()
	a, b, missing := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "missing")
	require.NoError(t, os.WriteFile(b, []byte(" id-b\n"), 0o600))
	got, err := readFirst(missing, b, a)
	require.NoError(t, err)
	assert.Equal(t, " id-b\n", string(got))
	assert.Equal(t, "id-b", firstFile(missing, b))
	assert.Empty(t, firstFile(missing, a))
	_, err = readFirst(missing)
	assert.True(t, errors.Is(err, fs.ErrNotExist))
	_, err = readFirst(dir, b) // a directory exists but cannot be read: no fallback
	require.Error(t, err)
	assert.False(t, errors.Is(err, fs.ErrNotExist))
}
