package probes

import (
	"fmt"
	"net"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ResolveContainerPort turns a probe's port into a number the way kubelet does: an int is used as is;
// a string names one of the container's ports (its containerPort is used) and, when no port has that
// name, is parsed as a decimal number. The result must be in 1–65535. Errors wrap ErrInvalidPort.
func ResolveContainerPort(param intstr.IntOrString, container *v1.Container) (int, error) {
	port := -1
	var err error
	switch param.Type {
	case intstr.Int:
		port = param.IntValue()
	case intstr.String:
		if port, err = findPortByName(container, param.StrVal); err != nil {
			// kubelet falls back to parsing the name as a number ("118").
			if n, aerr := strconv.Atoi(param.StrVal); aerr == nil {
				port, err = n, nil
			} else {
				return port, fmt.Errorf("%w: %w", ErrInvalidPort, err)
			}
		}
	default:
		return port, fmt.Errorf("%w: intOrString had no kind: %+v", ErrInvalidPort, param)
	}
	if port > 0 && port < 65536 {
		return port, nil
	}
	return port, fmt.Errorf("%w: invalid port number: %v", ErrInvalidPort, port)
}

// findPortByName returns the containerPort of the container's port named portName.
func findPortByName(container *v1.Container, portName string) (int, error) {
	if container != nil {
		for _, p := range container.Ports {
			if p.Name == portName {
				return int(p.ContainerPort), nil
			}
		}
	}
	return 0, fmt.Errorf("port %s not found", portName)
}

func joinHostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
