package kubectl

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Probe prints a probe as `kubectl describe` does: the handler, then its timing —
// "http-get http://:8080/healthz delay=0s timeout=1s period=10s successThreshold=1 failureThreshold=3",
// "exec [cat /tmp/healthy] ...", "tcp-socket :6379 ...", "grpc <pod>:9000 svc ...".
func Probe(p *v1.Probe) string {
	attrs := fmt.Sprintf("delay=%ds timeout=%ds period=%ds successThreshold=%d failureThreshold=%d",
		p.InitialDelaySeconds, p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold)
	switch {
	case p.Exec != nil:
		return fmt.Sprintf("exec %v %s", p.Exec.Command, attrs)
	case p.HTTPGet != nil:
		h := p.HTTPGet
		u := url.URL{Scheme: strings.ToLower(string(h.Scheme)), Host: h.Host, Path: h.Path}
		if port := h.Port.String(); port != "" {
			u.Host = net.JoinHostPort(h.Host, port)
		}
		return fmt.Sprintf("http-get %s %s", u.String(), attrs)
	case p.TCPSocket != nil:
		return fmt.Sprintf("tcp-socket %s:%s %s", p.TCPSocket.Host, p.TCPSocket.Port.String(), attrs)
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return fmt.Sprintf("grpc <pod>:%d %s %s", p.GRPC.Port, service, attrs)
	default:
		return "unknown " + attrs
	}
}
