//go:build !linux

package sysfault

import (
	"errors"
	"fmt"
)

// DenyNewDescriptors is not supported on this system.
func DenyNewDescriptors() (restore func() error, err error) {
	return nil, fmt.Errorf("deny new descriptors: %w", errors.ErrUnsupported)
}

// HangingPort is not supported on this system.
func HangingPort() (port int, close func(), err error) {
	return 0, nil, fmt.Errorf("hanging port: %w", errors.ErrUnsupported)
}

// RefusingPort is not supported on this system.
func RefusingPort() (port int, close func(), err error) {
	return 0, nil, fmt.Errorf("refusing port: %w", errors.ErrUnsupported)
}
