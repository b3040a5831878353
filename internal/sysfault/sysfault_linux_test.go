package sysfault

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const helperEnv = "SYSFAULT_TEST_DENY"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		restore, err := DenyNewDescriptors()
		if err != nil {
			os.Exit(3)
		}
		_, openErr := os.Open(os.DevNull)
		_, dialErr := net.Dial("tcp", "127.0.0.1:1")
		if err := restore(); err != nil {
			os.Exit(4)
		}
		f, afterErr := os.Open(os.DevNull)
		if errors.Is(openErr, syscall.EMFILE) && errors.Is(dialErr, syscall.EMFILE) && afterErr == nil {
			_ = f.Close()
			os.Exit(0)
		}
		os.Exit(5)
	}
	os.Exit(m.Run())
}

// TestDenyNewDescriptors runs in a child process (the test binary re-executed): opening a file and
// a socket both fail with EMFILE, and work again once the limit is restored.
func TestDenyNewDescriptors(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

func TestHangingPort(t *testing.T) {
	port, closePort, err := HangingPort()
	require.NoError(t, err)
	defer closePort()
	_, err = net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 300*time.Millisecond)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout(), "the connect hung until its timeout: %v", err)
}

func TestRefusingPort(t *testing.T) {
	port, closePort, err := RefusingPort()
	require.NoError(t, err)
	defer closePort()
	_, err = net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	_, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	require.ErrorIs(t, err, syscall.EADDRINUSE, "nobody else can take it")
}
