package kubeletconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The only apiVersion and kind kubelet 1.37.2 reads from its configuration files.
const (
	APIVersion = "kubelet.config.k8s.io/v1beta1"
	Kind       = "KubeletConfiguration"
)

// dropInExt is the extension of the drop-in directory's files that are read (kubelet's).
const dropInExt = ".conf"

// Fields maps each KubeletConfiguration field node uses to the `node run` flag it sets (address
// and readOnlyPort together set --listen, and only when readOnlyPort is not 0).
var Fields = map[string]string{
	"staticPodPath":          "pod-manifest-path",
	"staticPodURL":           "manifest-url",
	"staticPodURLHeader":     "manifest-url-header",
	"fileCheckFrequency":     "file-check-frequency",
	"httpCheckFrequency":     "http-check-frequency",
	"address":                "listen",
	"readOnlyPort":           "listen",
	"enableProfilingHandler": "profiling",
	"featureGates":           "feature-gates",
	"crashLoopBackOff.maxContainerRestartPeriod": "crashloop-backoff-max",
	"nodeStatusUpdateFrequency":                  "node-status-update-frequency",
	"logging.format":                             "log-format",
}

// Setting is a value of one of node's flags, as the files set it.
type Setting struct {
	Flag  string // `node run`'s flag, without dashes
	Field string // the field that sets it ("address, readOnlyPort" for --listen)
	From  string // "--config FILE" or "--config-dir FILE": the file that set it (the last to)
	Value string // in the flag's syntax
}

// Config is what the files say to node.
type Config struct {
	// Settings are the flags the files set, by flag name. Zero values are not settings: kubelet
	// reads them as its defaults.
	Settings []Setting
	// Header is staticPodURLHeader (also a Setting, for its origin), nil when the files set none: a
	// value may hold a comma, which --manifest-url-header's syntax cannot.
	Header http.Header
	// Unused are the fields the files set that node does not use, by file and then field (a field
	// of logging or crashLoopBackOff as "logging.verbosity").
	Unused []Unused
	// Warnings are what kubelet would warn of too: unknown fields (read leniently) and the drop-in
	// directory's files that are not *.conf.
	Warnings []string
}

// Unused is a field node does not use and the file that set it (the last to, with drop-ins).
type Unused struct{ Field, File string }

// Read reads kubelet's configuration file (path; "" for none) and its drop-in directory (dir; ""
// for none) as kubelet 1.37.2 does (doc.go). Every error names the flag, the file and, where one
// is at fault, the field.
func Read(path, dir string) (*Config, error) {
	if path == "" && dir == "" {
		return &Config{}, nil
	}
	r := &reader{path: path, origin: map[string]string{}}
	merged := map[string]any{"apiVersion": APIVersion, "kind": Kind}
	var warnings []string
	add := func(flag, file string) error {
		doc, err := readDoc(file)
		if err != nil {
			return fmt.Errorf("%s %s: %w", flag, file, err)
		}
		for k := range doc {
			r.origin[k] = file
		}
		merged = mergePatch(merged, doc).(map[string]any)
		return nil
	}
	if path != "" {
		if err := add("--config", path); err != nil {
			return nil, err
		}
	}
	if dir != "" {
		files, skipped, err := dropIns(dir)
		if err != nil {
			return nil, fmt.Errorf("--config-dir: %w", err)
		}
		for _, f := range skipped {
			warnings = append(warnings, fmt.Sprintf("%s: skipped: only the drop-in directory's %s files are read", f, dropInExt))
		}
		for _, f := range files {
			if err := add("--config-dir", f); err != nil {
				return nil, err
			}
		}
	}
	kc, unknown, err := r.decode(merged)
	if err != nil {
		return nil, err
	}
	for _, field := range slices.Sorted(maps.Keys(unknown)) {
		warnings = append(warnings, fmt.Sprintf("%s: unknown field %q: ignored, as kubelet ignores it (it reads a file leniently when only unknown fields fail strict decoding)", r.origin[top(field)], field))
	}
	c, err := r.settings(kc, merged, unknown)
	if err != nil {
		return nil, err
	}
	c.Warnings = warnings
	return c, nil
}

// reader knows which file set each field, for errors.
type reader struct {
	path   string            // --config's file
	origin map[string]string // top-level field → the last file that set it
}

// from names the file that set field, with its flag: "--config FILE" or "--config-dir FILE".
func (r *reader) from(field string) string {
	file := r.origin[top(field)]
	if file == r.path {
		return "--config " + file
	}
	return "--config-dir " + file
}

// at names field and where it was set, for an error: "--config FILE: field".
func (r *reader) at(field string) string { return r.from(field) + ": " + field }

// top returns a field path's first segment ("logging.format" → "logging").
func top(field string) string {
	t, _, _ := strings.Cut(field, ".")
	return t
}

// readDoc reads one file: YAML or JSON, one KubeletConfiguration object, its relative
// staticPodPath resolved against the file's directory. Errors do not name the file.
func readDoc(file string) (map[string]any, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(abs)
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return nil, pe.Err // "no such file or directory"
	} else if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("the file is empty: a KubeletConfiguration needs apiVersion: %s and kind: %s", APIVersion, Kind)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil || doc == nil {
		return nil, fmt.Errorf("not a KubeletConfiguration: want an object with apiVersion: %s and kind: %s", APIVersion, Kind)
	}
	av, _ := doc["apiVersion"].(string)
	kind, _ := doc["kind"].(string)
	if av != APIVersion || kind != Kind {
		return nil, fmt.Errorf("apiVersion %q, kind %q: want apiVersion: %s and kind: %s (the only configuration kubelet 1.37 reads)", av, kind, APIVersion, Kind)
	}
	if p, ok := doc["staticPodPath"].(string); ok && p != "" && !filepath.IsAbs(p) {
		doc["staticPodPath"] = filepath.Join(filepath.Dir(abs), p)
	}
	return doc, nil
}

// dropIns lists dir's *.conf files in lexical walk order (subdirectories included), and the files
// skipped.
func dropIns(dir string) (files, skipped []string, err error) {
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			return nil
		case filepath.Ext(p) != dropInExt:
			skipped = append(skipped, p)
		default:
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("the drop-in directory: %w", err)
	}
	return files, skipped, nil
}

// mergePatch applies patch to target as a JSON merge patch (RFC 7386): objects merge key by key,
// null deletes, anything else replaces.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

// decode decodes the merged object strictly; the unknown fields are returned by path (kubelet's
// lenient decoding ignores them), a value of the wrong type is an error naming its field and file.
func (r *reader) decode(merged map[string]any) (*kubeletv1beta1.KubeletConfiguration, map[string]bool, error) {
	js, err := json.Marshal(merged)
	if err != nil {
		return nil, nil, err
	}
	var kc kubeletv1beta1.KubeletConfiguration
	strict, err := sigsjson.UnmarshalStrict(js, &kc)
	if err != nil {
		return nil, nil, r.blame(merged, err)
	}
	unknown := map[string]bool{}
	for _, s := range strict { // `unknown field "a.b"` (duplicates cannot survive the merge)
		if _, rest, ok := strings.Cut(s.Error(), `"`); ok {
			field, _, _ := strings.Cut(rest, `"`)
			unknown[field] = true
		}
	}
	return &kc, unknown, nil
}

// blame finds the top-level field whose value fails to decode (a duration's parser, for one,
// does not say which field it was given), so the error names it and its file.
func (r *reader) blame(merged map[string]any, err error) error {
	for _, k := range slices.Sorted(maps.Keys(merged)) {
		one, _ := json.Marshal(map[string]any{k: merged[k]})
		var kc kubeletv1beta1.KubeletConfiguration
		if e := json.Unmarshal(one, &kc); e != nil {
			return fmt.Errorf("%s: %w", r.at(k), e)
		}
	}
	return err
}

// settings picks what node uses from the decoded configuration; merged (the object as the files
// wrote it) says which fields were set at all, and unknown which of them kubelet does not know.
func (r *reader) settings(kc *kubeletv1beta1.KubeletConfiguration, merged map[string]any, unknown map[string]bool) (*Config, error) {
	c := &Config{}
	set := func(field, value string) {
		c.Settings = append(c.Settings, Setting{Flag: Fields[field], Field: field, From: r.from(field), Value: value})
	}
	str := func(field, v string) {
		if v != "" {
			set(field, v)
		}
	}
	dur := func(field string, d time.Duration) error {
		if d < 0 {
			return fmt.Errorf("%s: %v: must not be negative", r.at(field), d)
		}
		if d != 0 { // 0 is kubelet's default, as kubeadm writes it
			set(field, d.String())
		}
		return nil
	}
	str("staticPodPath", kc.StaticPodPath)
	str("staticPodURL", kc.StaticPodURL)
	if len(kc.StaticPodURLHeader) > 0 {
		c.Header = http.Header{}
		var pairs []string
		for _, name := range slices.Sorted(maps.Keys(kc.StaticPodURLHeader)) {
			if strings.TrimSpace(name) == "" {
				return nil, fmt.Errorf("%s: a header name is empty", r.at("staticPodURLHeader"))
			}
			for _, v := range kc.StaticPodURLHeader[name] {
				c.Header.Add(name, v)
				pairs = append(pairs, name+":"+v)
			}
		}
		set("staticPodURLHeader", strings.Join(pairs, ","))
	}
	for _, d := range []struct {
		field string
		d     time.Duration
	}{
		{"fileCheckFrequency", kc.FileCheckFrequency.Duration},
		{"httpCheckFrequency", kc.HTTPCheckFrequency.Duration},
		{"nodeStatusUpdateFrequency", kc.NodeStatusUpdateFrequency.Duration},
	} {
		if err := dur(d.field, d.d); err != nil {
			return nil, err
		}
	}
	if p := kc.CrashLoopBackOff.MaxContainerRestartPeriod; p != nil {
		if err := dur("crashLoopBackOff.maxContainerRestartPeriod", p.Duration); err != nil {
			return nil, err
		}
	}
	if kc.ReadOnlyPort < 0 || kc.ReadOnlyPort > 65535 {
		return nil, fmt.Errorf("%s: %d: must be between 0 and 65535, inclusive", r.at("readOnlyPort"), kc.ReadOnlyPort)
	}
	listen := kc.ReadOnlyPort != 0
	if listen {
		host := kc.Address
		if host == "" {
			host = "127.0.0.1" // node's --listen default host (kubelet's address defaults to 0.0.0.0)
		}
		c.Settings = append(c.Settings, Setting{Flag: "listen", Field: "address, readOnlyPort", From: r.from("readOnlyPort"),
			Value: net.JoinHostPort(host, strconv.Itoa(int(kc.ReadOnlyPort)))})
	}
	if kc.EnableProfilingHandler != nil {
		set("enableProfilingHandler", strconv.FormatBool(*kc.EnableProfilingHandler))
	}
	if len(kc.FeatureGates) > 0 {
		var gates []string
		for _, name := range slices.Sorted(maps.Keys(kc.FeatureGates)) {
			gates = append(gates, fmt.Sprintf("%s=%t", name, kc.FeatureGates[name]))
		}
		set("featureGates", strings.Join(gates, ","))
	}
	str("logging.format", kc.Logging.Format)
	sort.Slice(c.Settings, func(i, j int) bool { return c.Settings[i].Flag < c.Settings[j].Flag })

	unused := func(field string) {
		if !unknown[field] { // a warning already
			c.Unused = append(c.Unused, Unused{field, r.origin[top(field)]})
		}
	}
	for k, v := range merged {
		switch {
		case k == "apiVersion" || k == "kind":
		case k == "address" || k == "readOnlyPort":
			if !listen {
				unused(k)
			}
		case k == "logging" || k == "crashLoopBackOff":
			sub, _ := v.(map[string]any)
			for s := range sub {
				if _, used := Fields[k+"."+s]; !used {
					unused(k + "." + s)
				}
			}
		default:
			if _, used := Fields[k]; !used {
				unused(k)
			}
		}
	}
	sort.Slice(c.Unused, func(i, j int) bool {
		a, b := c.Unused[i], c.Unused[j]
		return a.File < b.File || a.File == b.File && a.Field < b.Field
	})
	return c, nil
}
