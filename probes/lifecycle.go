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
func validateLifecycle(lc *v1.Lifecycle, grace *int64, path *field.Path) field.ErrorList {
	if lc == nil {
		return nil
	}
	var errs field.ErrorList
	for _, hook := range []struct {
		name string
		h    *v1.LifecycleHandler
	}{{"postStart", lc.PostStart}, {"preStop", lc.PreStop}} {
		if hook.h != nil {
			errs = append(errs, validateLifecycleHandler(hook.h, grace, path.Child(hook.name))...)
		}
	}
	return errs
}

func validateLifecycleHandler(h *v1.LifecycleHandler, grace *int64, path *field.Path) field.ErrorList {
	errs := validateHandler(&v1.ProbeHandler{Exec: h.Exec, HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket}, path)
	if h.Sleep == nil {
		return errs
	}
	if h.Exec != nil || h.HTTPGet != nil || h.TCPSocket != nil {
		// validateHandler counted one handler already; it reported "must specify" for none.
		return append(errs, field.Forbidden(path.Child("sleep"), "may not specify more than 1 handler type"))
	}
	errs = dropHandlerRequired(errs, path)
	if grace != nil && (h.Sleep.Seconds < 0 || h.Sleep.Seconds > *grace) {
		errs = append(errs, field.Invalid(path.Child("sleep"), h.Sleep.Seconds,
			fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *grace)))
	}
	return errs
}

// dropHandlerRequired drops validateHandler's "must specify a handler type" at path: a sleep is
// the handler.
func dropHandlerRequired(errs field.ErrorList, path *field.Path) field.ErrorList {
	out := errs[:0]
	for _, e := range errs {
		if e.Type == field.ErrorTypeRequired && e.Field == path.String() {
			continue
		}
		out = append(out, e)
	}
	return out
}
