package health

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// CheckTimeout bounds one run of one check.
const CheckTimeout = 10 * time.Second

// Check is one named health check.
type Check struct {
	Name string
	Run  func(ctx context.Context) error
}

// Ping is kubelet's "ping" check: it always passes (the process answers at all).
var Ping = Check{Name: "ping", Run: func(context.Context) error { return nil }}

// Within runs f on a goroutine of its own and waits for it until ctx ends: a check of something
// that may block for ever (a lock) fails instead of hanging. A goroutine whose f never returns
// stays behind.
func Within(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no answer: %w", ctx.Err())
	}
}

// run runs c with CheckTimeout (less if ctx ends first).
func run(ctx context.Context, c Check) error {
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	return c.Run(ctx)
}

// Failures runs every check, one after another, and returns "name: error" for each that fails.
func Failures(ctx context.Context, checks []Check) []string {
	var failed []string
	for _, c := range checks {
		if err := run(ctx, c); err != nil {
			failed = append(failed, c.Name+": "+err.Error())
		}
	}
	return failed
}

// Handler serves /healthz and /healthz/NAME over checks, as the API server's healthz package
// (doc.go); failures are logged with their reasons.
func Handler(checks []Check, log hclog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { root(w, r, checks, log) })
	mux.HandleFunc("GET /healthz/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		i := slices.IndexFunc(checks, func(c Check) bool { return c.Name == name })
		if i < 0 {
			http.Error(w, fmt.Sprintf("404 page not found: no health check %q (checks: %s)", name, names(checks)), http.StatusNotFound)
			return
		}
		if err := run(r.Context(), checks[i]); err != nil {
			log.Warn("health check failed", "check", name, "error", err)
			http.Error(w, "internal server error: "+err.Error(), http.StatusInternalServerError)
			return
		}
		plain(w)
		_, _ = fmt.Fprint(w, "ok")
	})
	return mux
}

func root(w http.ResponseWriter, r *http.Request, checks []Check, log hclog.Logger) {
	q := r.URL.Query()
	excluded := map[string]bool{}
	for _, e := range q["exclude"] {
		for n := range strings.SplitSeq(e, ",") {
			if n = strings.TrimSpace(n); n != "" {
				excluded[n] = true
			}
		}
	}
	var out strings.Builder
	var failed, reasons []string
	for _, c := range checks {
		if excluded[c.Name] {
			delete(excluded, c.Name)
			fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.Name)
			continue
		}
		if err := run(r.Context(), c); err != nil {
			fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.Name)
			failed = append(failed, c.Name)
			reasons = append(reasons, c.Name+": "+err.Error())
			continue
		}
		fmt.Fprintf(&out, "[+]%s ok\n", c.Name)
	}
	if len(excluded) > 0 {
		var quoted []string
		for _, n := range slices.Sorted(maps.Keys(excluded)) {
			quoted = append(quoted, strconv.Quote(n))
		}
		fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(quoted, ","))
	}
	if len(failed) > 0 {
		log.Warn("health check failed", "checks", failed, "reasons", reasons)
		http.Error(w, out.String()+"healthz check failed", http.StatusInternalServerError)
		return
	}
	plain(w)
	if _, verbose := q["verbose"]; !verbose {
		_, _ = fmt.Fprint(w, "ok")
		return
	}
	_, _ = fmt.Fprint(w, out.String()+"healthz check passed\n")
}

func plain(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
}

func names(checks []Check) string {
	var ns []string
	for _, c := range checks {
		ns = append(ns, c.Name)
	}
	return strings.Join(ns, ", ")
}
