package probes

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// LifecycleUserAgent is the User-Agent of an httpGet lifecycle hook: kubelet's "kube-lifecycle/<major>.<minor>".
const LifecycleUserAgent = "kube-lifecycle/1.37"

// HTTPHook runs an httpGet lifecycle hook (postStart or preStop) as kubelet 1.37's handler runner
// does (pkg/kubelet/lifecycle/handlers.go): the request is a probe's (host defaults to podIP, a
// named port resolves against container, httpHeaders, "User-Agent: kube-lifecycle/1.37"), sent by
// a client that does not verify TLS and follows same-host redirects only, and any response is a
// success, whatever its status: only a request that fails is the hook's error. An https request
// answered in plain HTTP is sent again over http, without its Authorization header; fellBack
// reports it (kubelet's LifecycleHTTPFallback event). ctx bounds it (kubelet sets no timeout).
func HTTPHook(ctx context.Context, action *v1.HTTPGetAction, container *v1.Container, podIP string) (fellBack bool, err error) {
	req, err := newHTTPRequest(ctx, action, container, podIP, LifecycleUserAgent)
	if err != nil {
		return false, err
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true} //nolint:gosec // kubelet's hook client
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		return redirectChecker(false, r, via)
	}}
	resp, err := client.Do(req)
	discard(resp)
	if err == nil || !isHTTPResponseError(err) {
		return false, err
	}
	req = req.Clone(ctx)
	req.URL.Scheme = "http"
	req.Header.Del("Authorization")
	resp, httpErr := client.Do(req)
	discard(resp)
	if httpErr != nil {
		return false, err // kubelet: the first error stands
	}
	return true, nil
}

// isHTTPResponseError is kubelet's: an https request a server answered in plain HTTP.
func isHTTPResponseError(err error) bool {
	return err != nil && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

func discard(resp *http.Response) {
	if resp == nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
}

// setLifecycleDefaults is the API server's default for a hook's httpGet (path "/", scheme HTTP).
func setLifecycleDefaults(lc *v1.Lifecycle) {
	if lc == nil {
		return
	}
	for _, h := range []*v1.LifecycleHandler{lc.PostStart, lc.PreStop} {
		if h == nil || h.HTTPGet == nil {
			continue
		}
		if h.HTTPGet.Path == "" {
			h.HTTPGet.Path = DefaultHTTPPath
		}
		if h.HTTPGet.Scheme == "" {
			h.HTTPGet.Scheme = DefaultHTTPScheme
		}
	}
}

// validateLifecycle is the API server's validateLifecycle (1.37) for a container's lifecycle at
// path: each hook has exactly one handler (exec, httpGet, tcpSocket or sleep), each valid, a
// sleep of 0 to terminationGracePeriodSeconds seconds. stopSignal is left to the callers: the API
// server drops it while its gate (ContainerStopSignals, alpha) is off.
func validateLifecycle(lc *v1.Lifecycle, grace *int64, path *lazyPath) field.ErrorList {
	if lc == nil {
		return nil
	}
	var errs field.ErrorList
	for _, hook := range []struct {
		name string
		h    *v1.LifecycleHandler
	}{{"postStart", lc.PostStart}, {"preStop", lc.PreStop}} {
		if hook.h != nil {
			errs = append(errs, validateLifecycleHandler(hook.h, grace, path.child(hook.name))...)
		}
	}
	return errs
}

// validateLifecycleHandler checks that h has exactly one handler, sleep last in the API's order (a
// probe's, then sleep), and that one's fields.
func validateLifecycleHandler(h *v1.LifecycleHandler, grace *int64, path *lazyPath) field.ErrorList {
	others := &v1.ProbeHandler{Exec: h.Exec, HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket}
	switch {
	case h.Sleep == nil:
		return validateHandler(others, path)
	case h.Exec != nil || h.HTTPGet != nil || h.TCPSocket != nil: // sleep is a second handler
		return append(validateHandler(others, path), field.Forbidden(path.child("sleep").build(), "may not specify more than 1 handler type"))
	case grace != nil && (h.Sleep.Seconds < 0 || h.Sleep.Seconds > *grace):
		return field.ErrorList{field.Invalid(path.child("sleep").build(), h.Sleep.Seconds,
			fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *grace))}
	default:
		return nil
	}
}
