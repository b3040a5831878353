package main

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// staticPods reports whether node runs static pods: from a --pod-manifest-path, a --manifest-url or
// both (one watcher reads them, staticpod's).
func (c *runConfig) staticPods() bool { return c.manifestPath != "" || c.manifestURL != "" }

// checkManifestURL checks --manifest-url and the flags that go with it (given: the flags set);
// errors name the flag. A flag that would silently do nothing without --manifest-url is refused.
func (c *runConfig) checkManifestURL(given map[string]bool) error {
	if c.manifestURL == "" {
		for _, flag := range []string{"manifest-url-header", "http-check-frequency"} {
			if given[flag] {
				return fmt.Errorf("--%s: needs --manifest-url", flag)
			}
		}
		return nil
	}
	u, err := url.Parse(c.manifestURL)
	if err == nil && (u.Scheme != "http" && u.Scheme != "https" || u.Host == "") {
		err = errors.New("must be an absolute http or https URL (e.g. http://config.example/pods.yaml)")
	}
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // the URL is named already
		}
		return fmt.Errorf("--manifest-url %q: %w", c.manifestURL, err)
	}
	if c.httpCheck <= 0 {
		return errors.New("--http-check-frequency must be a positive duration (e.g. 20s)")
	}
	return nil
}

// headerFlag is --manifest-url-header: kubelet's colon-separated multimap, "a:hello,b:again", each
// use of the flag adding to the last; a name given twice sends both values, in order.
type headerFlag struct{ header http.Header }

func (h *headerFlag) String() string {
	if h == nil || h.header == nil {
		return ""
	}
	var pairs []string
	for _, name := range slices.Sorted(maps.Keys(h.header)) {
		for _, v := range h.header[name] {
			pairs = append(pairs, name+":"+v)
		}
	}
	return strings.Join(pairs, ",")
}

func (h *headerFlag) Set(value string) error {
	if h.header == nil {
		h.header = http.Header{}
	}
	for _, pair := range strings.Split(value, ",") {
		if pair == "" {
			continue
		}
		name, v, ok := strings.Cut(pair, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return fmt.Errorf("malformed pair %q: want NAME:VALUE (e.g. 'Authorization:Bearer x,X-Node:n1')", pair)
		}
		h.header.Add(name, strings.TrimSpace(v))
	}
	return nil
}
