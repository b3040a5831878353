package probes

import (
	"fmt"
	"net"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ResolveContainerPort turns a probe's port into a number the way kubelet 1.37 does: an int is used
// as is; a string names one of the container's ports (its containerPort is used). The result must
// be in 1–65535. Errors read exactly as kubelet's (`port "http" not found`, "invalid port number:
// 70000") and match ErrInvalidPort with errors.Is.
//
// kubelet up to 1.36 also parsed a name that matched no port as a number ("8080"); 1.37 does not, and
// neither does this: the API server refuses such a name anyway (an IANA_SVC_NAME has a letter).
func ResolveContainerPort(param intstr.IntOrString, container *v1.Container) (int, error) {
	port := -1
	var err error
	switch param.Type {
	case intstr.Int:
		port = param.IntValue()
	case intstr.String:
		if port, err = findPortByName(container, param.StrVal); err != nil {
			return port, err
		}
	default:
		return port, &portError{fmt.Sprintf("intOrString had no kind: %+v", param)}
	}
	if port > 0 && port < 65536 {
		return port, nil
	}
	return port, &portError{fmt.Sprintf("invalid port number: %v", port)}
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
	return 0, &portError{fmt.Sprintf("port %q not found", portName)}
}

// portError is a port that cannot be resolved: its text is kubelet's alone, and it is ErrInvalidPort
// for errors.Is.
type portError struct{ msg string }

func (e *portError) Error() string        { return e.msg }
func (e *portError) Is(target error) bool { return target == ErrInvalidPort }

func joinHostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
