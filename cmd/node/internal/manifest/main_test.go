package manifest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them (-f URL's GET starts the HTTP
// client's).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
