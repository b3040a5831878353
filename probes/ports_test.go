package probes

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestResolveContainerPort is kubelet 1.37's util_test TestFindPortByName + TestResolveContainerPort.
func TestResolveContainerPort(t *testing.T) {
	foo := &v1.Container{Ports: []v1.ContainerPort{{Name: "foo", ContainerPort: 8080}}}
	bar := &v1.Container{Ports: []v1.ContainerPort{{Name: "bar", ContainerPort: 9000}}}
	for _, tc := range []struct {
		name      string
		param     intstr.IntOrString
		container *v1.Container
		want      int
		wantErr   bool
	}{
		{"int", intstr.FromInt(443), foo, 443, false},
		{"int out of range", intstr.FromInt(66666), foo, 66666, true},
		{"name", intstr.FromString("foo"), foo, 8080, false},
		{"unknown name", intstr.FromString("foo"), bar, 0, true},
		{"invalid kind", intstr.IntOrString{Type: 2}, foo, -1, true},
		{"nil container name", intstr.FromString("foo"), nil, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveContainerPort(tc.param, tc.container)
			assert.Equal(t, tc.want, got)
			if tc.wantErr {
				require.ErrorIs(t, err, ErrInvalidPort)
			} else {
				require.NoError(t, err)
			}
		})
	}
	_, err := findPortByName(foo, "http")
	require.EqualError(t, err, `port "http" not found`, "kubelet 1.37's text, alone")
	require.ErrorIs(t, err, ErrInvalidPort)
	_, err = ResolveContainerPort(intstr.FromInt(70000), foo)
	require.EqualError(t, err, "invalid port number: 70000")
	_, err = ResolveContainerPort(intstr.FromString("8080"), foo)
	require.EqualError(t, err, `port "8080" not found`, "1.37 no longer reads a name as a number")
}

// TestGetURLParts and TestGetTCPAddrParts are kubelet's prober_test port cases, through the HTTP
// request builder and ResolveContainerPort (TCP; host 1.2.3.4).
func TestGetURLParts(t *testing.T) {
	c := &v1.Container{Ports: []v1.ContainerPort{{Name: "found", ContainerPort: 93}}}
	for _, tc := range []struct {
		port    intstr.IntOrString
		host    string
		path    string
		wantURL string
	}{
		{port: intstr.FromInt(-1)},
		{port: intstr.FromString("")},
		{port: intstr.FromString("-1")},
		{port: intstr.FromString("not-found")},
		{port: intstr.FromString("found"), wantURL: "http://127.0.0.1:93"},
		{port: intstr.FromInt(76), wantURL: "http://127.0.0.1:76"},
		{port: intstr.FromString("118")}, // kubelet ≤1.36 parsed it as a number; 1.37 does not
		{port: intstr.FromInt(76), host: "hostname", path: "path", wantURL: "http://hostname:76/path"},
	} {
		action := &v1.HTTPGetAction{Host: tc.host, Port: tc.port, Path: tc.path}
		req, err := newHTTPRequest(t.Context(), action, c, "127.0.0.1", UserAgent)
		if tc.wantURL == "" {
			require.ErrorIs(t, err, ErrInvalidPort, "port %v", tc.port)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.wantURL, req.URL.String())
	}
}

func TestGetTCPAddrParts(t *testing.T) {
	c := &v1.Container{Ports: []v1.ContainerPort{{Name: "found", ContainerPort: 93}}}
	for _, tc := range []struct {
		port intstr.IntOrString
		want int
	}{
		{intstr.FromInt(-1), 0}, {intstr.FromString(""), 0}, {intstr.FromString("-1"), 0},
		{intstr.FromString("not-found"), 0}, {intstr.FromString("found"), 93},
		{intstr.FromInt(76), 76}, {intstr.FromString("118"), 0},
	} {
		got, err := ResolveContainerPort(tc.port, c)
		if tc.want == 0 {
			require.Error(t, err, "port %v", tc.port)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, "1.2.3.4:"+itoa(tc.want), joinHostPort("1.2.3.4", got))
	}
}
