package probes_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probeactor/probeactor/probes"
)

// One readiness attempt against a container's named port, after API defaulting and validation.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ready"))
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{
		Name:  "web",
		Ports: []v1.ContainerPort{{Name: "http", ContainerPort: int32(port)}},
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{
			HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("http"), Path: "/ready"},
		}},
	}}}}
	probes.SetDefaults(pod)
	if errs := probes.ValidatePod(pod); len(errs) > 0 {
		fmt.Println(errs.ToAggregate())
		return
	}

	c := &pod.Spec.Containers[0]
	p := probes.New(nil)
	out, err := p.Probe(context.Background(), c.ReadinessProbe, probes.Target{Container: c, PodIP: "127.0.0.1"})
	fmt.Println(out.Result, out.Output, err)
	// Output: success ready <nil>
}
