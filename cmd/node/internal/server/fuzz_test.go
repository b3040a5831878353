package server

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzRoutes sends arbitrary request lines (method and target: paths, namespaces, names,
// percent-encoding, query parameters) through every route. Whatever the input: no panic, no 5xx,
// and every 4xx carries one line of text that says more than the status. Its seed corpus runs in
// `make test`; `go test -fuzz FuzzRoutes ./cmd/node/internal/server` explores further.
func FuzzRoutes(f *testing.F) {
	for _, target := range []string{
		"/", "/healthz", "/pods", "/pods/", "/pods/default/web", "/pods/default/web/", "/pods/default",
		"/pods/Default/web", "/pods/default/nope", "/pods/a%2Fb/c", "/pods/%2e%2e/web", "/pods/../../etc/passwd",
		"/pods/default/web%0aX-Injected:%201", "/pods/%ff%fe/web", "/pods/default/" + strings.Repeat("a", 300),
		"/events", "/nodes", "/nodes/x", "/metrics", "/metrics/probes", "/debug/pprof/", "*", "http://other/pods", "//pods",
		"/containerLogs/default/web/app", "/containerLogs/default/web/app?previous=true",
		"/containerLogs/default/web/app?previous=1&follow=t", "/containerLogs/default/web/app?follow=true&tailLines=1",
		"/containerLogs/default/web/app?tail=all", "/containerLogs/default/web/app?tail=-3", "/containerLogs/default/web/app?tail=",
		"/containerLogs/default/web/app?tailLines=99999999999999999999", "/containerLogs/default/web/app?tailLines=1e3",
		"/containerLogs/default/web/app?limitBytes=-1", "/containerLogs/default/web/app?limitBytes=9223372036854775807",
		"/containerLogs/default/web/app?sinceSeconds=9223372036854775807", "/containerLogs/default/web/app?sinceSeconds=-5",
		"/containerLogs/default/web/app?sinceTime=2026-01-01T00:00:00%2B02:00", "/containerLogs/default/web/app?sinceTime=%00",
		"/containerLogs/default/web/app?previous=%ZZ", "/containerLogs/default/web/app?;", "/containerLogs/default/web/app?a=1&a=2",
		"/containerLogs/default/web/app?previous=true&previous=false", "/containerLogs/default/web/nope",
		"/containerLogs/default/web/%41pp", "/containerLogs/default/web", "/containerLogs/default/web/app/extra",
		"/containerLogs/default/nope/app?follow=true", "/containerLogs/%20/web/app", "/containerLogs/default/web/app%3Ffollow=true",
	} {
		for _, method := range []string{"GET", "HEAD", "POST", "OPTIONS"} {
			f.Add(method, target)
		}
	}
	env := newEnv(f)
	env.src.stopped.Store(true) // follows end after what is there
	h := handler(withDefaults(env.baseOpts))

	f.Fuzz(func(t *testing.T, method, target string) {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(method + " " + target + " HTTP/1.1\r\nHost: node\r\n\r\n")))
		if err != nil {
			return // not a request: net/http answers 400 before any route
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(ctx)) // a panic fails the test
		body := rec.Body.String()
		switch code := rec.Code; {
		case code >= 500:
			t.Fatalf("%s %q: %d %q", method, target, code, body)
		case code >= 400:
			msg := strings.TrimSuffix(body, "\n")
			if msg == "" || strings.Contains(msg, "\n") || !utf8.ValidString(msg) || len(msg) < 16 || strings.EqualFold(msg, http.StatusText(code)) {
				t.Fatalf("%s %q: %d without a clear one-line message: %q", method, target, code, body)
			}
		case code >= 300:
			if rec.Header().Get("Location") == "" {
				t.Fatalf("%s %q: %d without Location", method, target, code)
			}
		}
	})
}

func withDefaults(o Options) Options {
	o.setDefaults()
	return o
}
