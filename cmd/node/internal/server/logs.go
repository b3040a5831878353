package server

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// logOptions are the v1.PodLogOptions query parameters node supports.
type logOptions struct {
	previous, follow bool
	tailLines        int64     // -1: all
	limitBytes       int64     // math.MaxInt64: no limit
	since            time.Time // zero: from the start (sinceSeconds or sinceTime)
}

// logParams are the query parameters /containerLogs accepts; tail is kubelet's old name for
// tailLines ("all": every line).
var logParams = []string{"previous", "follow", "tailLines", "tail", "limitBytes", "sinceSeconds", "sinceTime"}

// parseLogOptions decodes and validates the query as kubelet does (its decoding, then
// ValidatePodLogOptions with the same messages). It returns 400 for a value that does not decode or
// a parameter node does not support, and kubelet's 422 for a decoded value that is invalid.
func parseLogOptions(q url.Values, now time.Time) (logOptions, int, error) {
	o := logOptions{tailLines: -1, limitBytes: math.MaxInt64}
	for k := range q {
		supported := false
		for _, p := range logParams {
			supported = supported || k == p
		}
		if !supported {
			return o, http.StatusBadRequest, fmt.Errorf("unsupported query parameter %q (supported: %s)", k, strings.Join(logParams, ", "))
		}
	}
	if tail := q.Get("tail"); tail != "" { // as kubelet: tail overrides tailLines
		q = cloneValues(q)
		if tail == "all" {
			q.Del("tailLines")
		} else {
			q.Set("tailLines", tail)
		}
	}
	for _, b := range []struct {
		name string
		dst  *bool
	}{{"previous", &o.previous}, {"follow", &o.follow}} {
		if q.Has(b.name) {
			v, err := strconv.ParseBool(q.Get(b.name))
			if err != nil {
				return o, http.StatusBadRequest, fmt.Errorf("query parameter %s=%q: must be true or false", b.name, q.Get(b.name))
			}
			*b.dst = v
		}
	}
	ints := map[string]*int64{}
	for _, name := range []string{"tailLines", "limitBytes", "sinceSeconds"} {
		if !q.Has(name) {
			continue
		}
		n, err := strconv.ParseInt(q.Get(name), 10, 64)
		if err != nil {
			return o, http.StatusBadRequest, fmt.Errorf("query parameter %s=%q: must be an integer", name, q.Get(name))
		}
		ints[name] = &n
	}
	var sinceTime *time.Time
	if q.Has("sinceTime") {
		t, err := time.Parse(time.RFC3339, q.Get("sinceTime"))
		if err != nil {
			return o, http.StatusBadRequest, fmt.Errorf("query parameter sinceTime=%q: must be an RFC 3339 time such as 2006-01-02T15:04:05Z", q.Get("sinceTime"))
		}
		sinceTime = &t
	}

	// kubelet's ValidatePodLogOptions, with its texts.
	var errs field.ErrorList
	if n := ints["tailLines"]; n != nil && *n < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *n, "must be greater than or equal to 0"))
	}
	if n := ints["limitBytes"]; n != nil && *n < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *n, "must be greater than 0"))
	}
	switch n := ints["sinceSeconds"]; {
	case n != nil && sinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath("sinceSeconds"), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case n != nil && *n < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *n, "must be greater than 0"))
	}
	if len(errs) > 0 {
		return o, http.StatusUnprocessableEntity, errs.ToAggregate()
	}

	if n := ints["tailLines"]; n != nil {
		o.tailLines = *n
	}
	if n := ints["limitBytes"]; n != nil {
		o.limitBytes = *n
	}
	switch {
	case sinceTime != nil:
		o.since = *sinceTime
	case ints["sinceSeconds"] != nil:
		o.since = now.Add(-time.Duration(min(*ints["sinceSeconds"], math.MaxInt64/int64(time.Second))) * time.Second)
	}
	return o, 0, nil
}

func cloneValues(q url.Values) url.Values {
	out := make(url.Values, len(q))
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// logs is GET /containerLogs/{namespace}/{pod}/{container}. What one request can hold is bounded:
// one open file, one copy buffer (32 KiB), no more than limitBytes written; a follow holds one of
// MaxFollows slots and ends with the client, the container's run, or Stop; every write has
// WriteStall to proceed.
func (s *server) logs(w http.ResponseWriter, r *http.Request) {
	ns, podName, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	if !checkNames(w, ns, podName, container) {
		return
	}
	opts, code, err := parseLogOptions(r.URL.Query(), s.opts.Now())
	if err != nil {
		http.Error(w, err.Error(), code)
		return
	}
	p, ok := s.find(w, r, ns, podName)
	if !ok {
		return
	}
	path, running, err := s.opts.Source.LogPath(p.UID, container, opts.previous)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if opts.follow {
		select {
		case s.follows <- struct{}{}:
			defer func() { <-s.follows }()
		default:
			w.Header().Set("Retry-After", "5")
			http.Error(w, fmt.Sprintf("too many log streams followed at once (limit %d): retry later, or read the log without follow=true", cap(s.follows)), http.StatusTooManyRequests)
			return
		}
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			http.Error(w, fmt.Sprintf("no log for container %q yet", container), http.StatusNotFound)
			return
		}
		http.Error(w, fmt.Sprintf("open the log of container %q: %v", container, err), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	start, err := startOffset(f, opts)
	if err == nil {
		_, err = f.Seek(start, io.SeekStart)
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("read the log of container %q: %v", container, err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if r.Method == http.MethodHead {
		return // no body: nothing to read or follow
	}
	left := opts.limitBytes
	copyNew := func() (int64, error) { // what the file has past the last copy, within limitBytes
		n, err := io.Copy(w, io.LimitReader(f, left))
		left -= n
		return n, err
	}
	if _, err := copyNew(); err != nil || !opts.follow || !running {
		return
	}
	rc := http.NewResponseController(w)
	t := time.NewTicker(s.opts.FollowPoll)
	defer t.Stop()
	for left > 0 {
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-r.Context().Done(): // client gone, or Stop
			return
		case <-t.C:
		}
		n, err := copyNew()
		if err != nil {
			return
		}
		if n > 0 {
			continue
		}
		// Nothing new: go on only while this run is still the container's running one.
		if cur, running, err := s.opts.Source.LogPath(p.UID, container, false); err != nil || cur != path || !running {
			_, _ = copyNew() // what it wrote last
			_ = rc.Flush()
			return
		}
	}
}

// startOffset is where the response starts: the end when the file was last written before
// opts.since (node's logs carry no per-line timestamps, so since selects whole runs), else the start
// of the last tailLines lines.
func startOffset(f *os.File, opts logOptions) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !opts.since.IsZero() && fi.ModTime().Before(opts.since) {
		return fi.Size(), nil
	}
	if opts.tailLines < 0 {
		return 0, nil
	}
	return tailOffset(f, fi.Size(), opts.tailLines)
}

// tailOffset returns the offset of the first of the last n lines of the size bytes of r (a last line
// without '\n' counts). It reads backwards in fixed blocks: memory stays constant however long
// the file or its lines are.
func tailOffset(r io.ReaderAt, size, n int64) (int64, error) {
	if n == 0 {
		return size, nil
	}
	var buf [32 << 10]byte
	lines := int64(0)
	for end := size; end > 0; {
		begin := max(end-int64(len(buf)), 0)
		b := buf[:end-begin]
		if _, err := r.ReadAt(b, begin); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != '\n' || begin+int64(i) == size-1 { // the last line's own newline starts nothing
				continue
			}
			if lines++; lines == n {
				return begin + int64(i) + 1, nil
			}
		}
		end = begin
	}
	return 0, nil
}
