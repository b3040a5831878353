package statuspage

import (
	"bytes"
	"context"
	_ "embed"
	"html/template"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Defaults of Options.
const (
	DefaultRefresh   = 2 * time.Second
	DefaultMaxEvents = 50
)

// Source is what the page shows besides the attempt history: node's pods (sorted, with their
// current status) and recorded events (the same as GET /pods and GET /events).
type Source interface {
	Pods(ctx context.Context) ([]v1.Pod, error)
	Events() v1.EventList
}

// Attempts is the attempt history (Recorder implements it).
type Attempts interface {
	Probe(Key) (Probe, bool)
	Stats() Stats
}

// Options configure Handler. Zero values take the defaults.
type Options struct {
	Source   Source
	Attempts Attempts
	// Refresh is how often the page reloads itself (whole seconds, at least 1 s).
	Refresh time.Duration
	// MaxEvents caps the events shown, newest first.
	MaxEvents int
	// Now is the clock of the page's "generated" line (default time.Now).
	Now    func() time.Time
	Logger hclog.Logger
	// Startups, when set, gives each container's time to started and to ready (startup.go).
	Startups Startups
}

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Parse(pageHTML))

// Handler serves the status page: GET (and HEAD) only, rendered in full before anything is
// written, so a failure is a clean 503 or 500 rather than half a page.
func Handler(opts Options) http.Handler {
	if opts.Refresh < time.Second {
		opts.Refresh = DefaultRefresh
	}
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = DefaultMaxEvents
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method "+r.Method+" not allowed: the status page is read-only", http.StatusMethodNotAllowed)
			return
		}
		pods, err := opts.Source.Pods(r.Context())
		if err != nil {
			http.Error(w, "status page: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		v := buildView(pods, opts.Source.Events().Items, opts.Attempts.Probe, opts.MaxEvents, opts.Refresh, opts.Now(), opts.Attempts.Stats())
		if opts.Startups != nil && len(pods) > 0 {
			uids := make([]types.UID, len(pods))
			for i := range pods {
				uids[i] = pods[i].UID
			}
			if startups, err := opts.Startups(r.Context(), uids...); err == nil {
				v.addStartups(startups)
			} else {
				opts.Logger.Debug("container startups", "error", err) // the page shows the rest
			}
		}
		var buf bytes.Buffer
		if err := pageTemplate.Execute(&buf, v); err != nil {
			opts.Logger.Error("render the status page", "error", err)
			http.Error(w, "status page: render: "+err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
		if _, err := w.Write(buf.Bytes()); err != nil {
			opts.Logger.Debug("write the status page", "error", err)
		}
	})
}
