package manifest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Stdin is the file name that means "read standard input" (`-f -`).
const Stdin = "-"

// Pod is one decoded Pod and where it came from.
type Pod struct {
	Pod    *v1.Pod
	Origin string // "pod.yaml: document 2" (or "pod.yaml: document 1: items[3]" inside a List)
}

// Error is one problem found while reading a manifest.
type Error struct {
	Origin string // "pod.yaml: document 2"
	Field  string // field path, empty when the problem is not about one field
	Detail string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", e.Origin, e.Detail)
	}
	return fmt.Sprintf("%s: %s: %s", e.Origin, e.Field, e.Detail)
}

// ErrNoPods is returned when the inputs hold no Pod at all.
var ErrNoPods = errors.New("no pods found")

// MaxFileSize bounds what is read of one file or of stdin: far above any real manifest (a List of
// thousands of pods), it keeps a mistaken `-f /dev/zero` or a runaway pipe from filling memory.
const MaxFileSize = 64 << 20

// ReadFiles decodes every file in names ("-" reads stdin; a directory, its manifests: see
// DirExtensions; an http or https URL, what a GET of it returns, as kubectl -f URL) and returns all pods, or every error found (joined with errors.Join; each one an
// *Error or a file-open error naming the file).
func ReadFiles(names []string, stdin io.Reader) ([]Pod, error) {
	var pods []Pod
	files, errs := expandDirs(names, false)
	for _, name := range files {
		var data []byte
		var err error
		display := displayName(name)
		switch {
		case name == Stdin:
			data, err = readLimited(stdin)
		case isURL(name):
			data, err = readURL(name)
		default:
			data, err = readFile(name)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", display, err))
			continue
		}
		p, derrs := Decode(display, data)
		pods = append(pods, p...)
		errs = append(errs, derrs...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(pods) == 0 {
		shown := make([]string, len(names))
		for i, n := range names {
			shown[i] = displayName(n)
		}
		return nil, fmt.Errorf("%s: %w", strings.Join(shown, ", "), ErrNoPods)
	}
	return pods, nil
}

// DirExtensions are the extensions of the files ReadFiles reads in a directory it is given, as
// kubectl -f DIR (without -R: not its subdirectories, nor files of other names).
var DirExtensions = []string{".json", ".yaml", ".yml"}

// ExpandDirs replaces each directory in names with its files that have one of DirExtensions, and
// those of its subdirectories (kubectl -f DIR -R), in name order; every error, joined. ReadFiles
// then reads them as files.
func ExpandDirs(names []string) ([]string, error) {
	files, errs := expandDirs(names, true)
	return files, errors.Join(errs...)
}

// expandDirs replaces each directory in names with its files that have one of DirExtensions (also
// those of its subdirectories, if recursive), in name order. A directory that cannot be read, or
// holds no such file, is an error naming it.
func expandDirs(names []string, recursive bool) ([]string, []error) {
	var files []string
	var errs []error
	for _, name := range names {
		if name == Stdin || isURL(name) {
			files = append(files, name)
			continue
		}
		if fi, err := os.Stat(name); err != nil || !fi.IsDir() {
			files = append(files, name) // reading it says what is wrong
			continue
		}
		n := len(files)
		root := name
		if fi, err := os.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			root += string(filepath.Separator) // WalkDir does not follow a link it is given; "link/" it does
		}
		err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error { // in name order
			switch {
			case err != nil:
				return err
			case e.IsDir() && path != root && !recursive:
				return filepath.SkipDir
			case !e.IsDir() && slices.Contains(DirExtensions, filepath.Ext(path)):
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if len(files) == n {
			within := "file"
			if recursive {
				within = "file in it or its subdirectories"
			}
			errs = append(errs, fmt.Errorf("%s: a directory with no %s %s (what -f reads in a directory, as kubectl)",
				name, strings.Join(DirExtensions, ", "), within))
		}
	}
	return files, errs
}

// isURL reports whether name is an http or https URL, which -f reads with a GET (kubectl's rule).
func isURL(name string) bool {
	return strings.HasPrefix(name, "http://") || strings.HasPrefix(name, "https://")
}

// URLTimeout bounds reading a manifest from a URL, from the request to the body's last byte.
var URLTimeout = 30 * time.Second

// readURL reads the body of a GET of url, at most MaxFileSize bytes; a status other than 200 is an
// error naming it, as kubectl's.
func readURL(url string) ([]byte, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone() // its own: nothing of it outlives the read
	defer tr.CloseIdleConnections()
	return Get(context.Background(), &http.Client{Timeout: URLTimeout, Transport: tr}, url, nil)
}

// Get returns the body of a GET of url, sent with header through client: a 200 answer's, at most
// MaxFileSize bytes. Any other status, or a request that fails (ctx ending included), is an error
// saying which, without the URL (the caller names it).
func Get(ctx context.Context, client *http.Client, url string, header http.Header) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if header != nil {
		req.Header = header.Clone()
	}
	resp, err := client.Do(req)
	if err != nil {
		var uerr *neturl.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // the URL is named already
		}
		return nil, fmt.Errorf("unable to read the URL: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("unable to read the URL: the server reported %s", resp.Status)
	}
	return readLimited(resp.Body)
}

// readFile reads the file name, at most MaxFileSize bytes.
func readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f)
}

// readLimited reads r to its end, or fails once it has given more than MaxFileSize bytes.
func readLimited(r io.Reader) ([]byte, error) {
	data, err := ReadAtMost(r, MaxFileSize)
	if errors.Is(err, ErrTooLarge) {
		return nil, fmt.Errorf("larger than %d MiB: not read (the most node reads of one manifest)", MaxFileSize>>20)
	}
	return data, err
}

// ErrTooLarge is ReadAtMost's error for an input over its bound.
var ErrTooLarge = errors.New("larger than the bound")

// ReadAtMost reads r to its end, or stops with ErrTooLarge once r has given more than most bytes:
// a manifest source's bound on what it holds in memory (-f here, the static pod watcher's files).
func ReadAtMost(r io.Reader, most int) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(most)+1))
	if err == nil && len(data) > most {
		return nil, ErrTooLarge
	}
	return data, err
}

// displayName is how a file is named in errors.
func displayName(name string) string {
	if name == Stdin {
		return "<stdin>"
	}
	return name
}

// Decode splits data (YAML documents separated by `---`, or a stream of JSON objects) and decodes
// every document strictly. source names the data in errors: "document N" counts the documents that
// hold more than comments, and is left out when there is one; a YAML syntax error names its line in
// the file. On any error it returns no pods.
func Decode(source string, data []byte) ([]Pod, []error) {
	docs, err := splitDocuments(data)
	if err != nil {
		return nil, []error{&Error{Origin: source, Detail: err.Error()}}
	}
	var pods []Pod
	var errs []error
	for i, doc := range docs {
		origin := fmt.Sprintf("%s: document %d", source, i+1)
		if len(docs) == 1 {
			origin = source
		}
		j := doc.data
		if doc.line > 0 { // YAML
			if j, err = yaml.YAMLToJSONStrict(doc.data); err != nil {
				errs = append(errs, &Error{Origin: origin, Detail: "invalid YAML: " + fileLines(err.Error(), doc.line)})
				continue
			}
		}
		p, derrs := decodeObject(origin, "", j)
		pods = append(pods, p...)
		errs = append(errs, derrs...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return pods, nil
}

// Empty reports whether data holds no document at all: nothing but white space, comments and
// separators (an empty List is a document).
func Empty(data []byte) bool {
	docs, err := splitDocuments(data)
	return err == nil && len(docs) == 0
}

// document is one document of a manifest file: JSON (line 0), or YAML and the line of the file it
// begins on.
type document struct {
	data []byte
	line int
}

// splitDocuments returns the documents of data that hold more than comments. YAML documents are
// split at `---` lines as kubectl splits them (utilyaml.YAMLReader: a `---` line may carry only a
// comment after it).
func splitDocuments(data []byte) ([]document, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, nil
	}
	var docs []document
	if trimmed[0] == '{' || trimmed[0] == '[' {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(trimmed), 4096)
		for {
			var raw runtime.RawExtension
			if err := dec.Decode(&raw); err != nil {
				if errors.Is(err, io.EOF) {
					return docs, nil
				}
				return nil, fmt.Errorf("invalid JSON: %w", err)
			}
			docs = append(docs, document{data: raw.Raw})
		}
	}
	var cur document
	flush := func() {
		if cur.line > 0 && !isBlankYAML(cur.data) {
			docs = append(docs, cur)
		}
		cur = document{}
	}
	for n, line := range bytes.SplitAfter(data, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("---")); ok {
			if r := bytes.TrimSpace(rest); len(r) > 0 && r[0] != '#' {
				return nil, fmt.Errorf("line %d: invalid YAML document separator: %s", n+1, r)
			}
			flush()
			continue
		}
		if cur.line == 0 {
			cur.line = n + 1
		}
		cur.data = append(cur.data, line...)
	}
	flush()
	return docs, nil
}

func isBlankYAML(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		l := bytes.TrimSpace(line)
		if len(l) == 0 || l[0] == '#' {
			continue
		}
		return false
	}
	return true
}

// yamlLine matches the line numbers in the YAML parser's errors, which count from the document's
// first line.
var yamlLine = regexp.MustCompile(`\bline (\d+)\b`)

// fileLines turns the line numbers in a YAML error about a document that begins on line first of
// its file into the file's.
func fileLines(msg string, first int) string {
	return yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(m, "line "))
		if err != nil {
			return m
		}
		return fmt.Sprintf("line %d", first+n-1)
	})
}

// typeHeader is the part of every object that says what it is.
type typeHeader struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// list is a v1.List (or PodList) whose items are decoded one by one.
type list struct {
	APIVersion string                 `json:"apiVersion"`
	Kind       string                 `json:"kind"`
	Metadata   map[string]any         `json:"metadata,omitempty"`
	Items      []runtime.RawExtension `json:"items"` // each item decoded strictly on its own
}

func decodeObject(origin, prefix string, doc []byte) ([]Pod, []error) {
	at := func(field string) string {
		if prefix == "" {
			return field
		}
		if field == "" {
			return prefix
		}
		return prefix + "." + field
	}
	if what := jsonKind(doc); what != "an object" {
		return nil, []error{&Error{Origin: origin, Field: prefix, Detail: fmt.Sprintf("not a Kubernetes object: got %s, want a mapping with apiVersion, kind, metadata and spec", what)}}
	}
	var hdr typeHeader
	if err := kjson.UnmarshalCaseSensitivePreserveInts(doc, &hdr); err != nil {
		return nil, []error{typeError(origin, prefix, doc, err)}
	}
	switch hdr.Kind {
	case "Pod":
		if hdr.APIVersion != "v1" {
			return nil, []error{&Error{Origin: origin, Field: at("apiVersion"), Detail: fmt.Sprintf("unsupported value %q for kind Pod: must be \"v1\"", hdr.APIVersion)}}
		}
		var pod v1.Pod
		errs := strictUnmarshal(origin, prefix, doc, &pod)
		if len(errs) > 0 {
			return nil, errs
		}
		return []Pod{{Pod: &pod, Origin: origin}}, nil
	case "List", "PodList":
		var l list
		if errs := strictUnmarshal(origin, prefix, doc, &l); len(errs) > 0 {
			return nil, errs
		}
		var pods []Pod
		var errs []error
		for i, item := range l.Items {
			itemPrefix := at(fmt.Sprintf("items[%d]", i))
			p, ierrs := decodeObject(origin, itemPrefix, item.Raw)
			for j := range p {
				p[j].Origin = origin + ": " + itemPrefix
			}
			pods = append(pods, p...)
			errs = append(errs, ierrs...)
		}
		return pods, errs
	case "":
		return nil, []error{&Error{Origin: origin, Field: at("kind"), Detail: "required: only kind Pod (or a List of Pods) can be run"}}
	default:
		return nil, []error{&Error{Origin: origin, Field: at("kind"), Detail: fmt.Sprintf("unsupported kind %q: only kind Pod (or a List of Pods) can be run", hdr.Kind)}}
	}
}

// strictUnmarshal decodes doc into v and reports unknown or duplicate fields with their paths.
func strictUnmarshal(origin, prefix string, doc []byte, v any) []error {
	strict, err := kjson.UnmarshalStrict(doc, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return []error{typeError(origin, prefix, doc, err)}
	}
	var errs []error
	for _, s := range strict {
		var fe kjson.FieldError
		if !errors.As(s, &fe) {
			errs = append(errs, &Error{Origin: origin, Field: prefix, Detail: cleanJSONError(s)})
			continue
		}
		path := fe.FieldPath()
		if prefix != "" {
			path = prefix + "." + path
		}
		detail := "unknown field"
		if strings.Contains(s.Error(), "duplicate field") {
			detail = "duplicate field"
		}
		errs = append(errs, &Error{Origin: origin, Field: path, Detail: detail})
	}
	return errs
}

func cleanJSONError(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonKind names the kind of JSON value doc holds ("an object", "a list", "a string", ...).
func jsonKind(doc []byte) string {
	d := bytes.TrimSpace(doc)
	if len(d) == 0 {
		return "nothing"
	}
	switch d[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// unmarshalType matches a decoding type error of sigs.k8s.io/json (its error type is internal).
var unmarshalType = regexp.MustCompile(`cannot unmarshal (.+) into Go struct field [^.]*\.(\S+) of type (\S+)`)

// typeError turns a decoding error of doc into an *Error with the field path and the expected type
// in manifest terms. The decoder's path has no list indices ("spec.containers.livenessProbe"):
// indexPath puts them back from doc.
func typeError(origin, prefix string, doc []byte, err error) *Error {
	m := unmarshalType.FindStringSubmatch(err.Error())
	if m == nil {
		return &Error{Origin: origin, Field: prefix, Detail: cleanJSONError(err)}
	}
	path := indexPath(doc, jsonPath(m[2]), m[1])
	if prefix != "" {
		path = prefix + "." + path
	}
	detail := fmt.Sprintf("Invalid value: got %s, want %s", m[1], jsonTypeName(m[3]))
	if m[3] == "string" { // YAML's classic: a value meant as text, read as another type
		switch {
		case m[1] == "bool":
			detail += ": quote it (YAML reads an unquoted y, n, yes, no, on, off, true or false as a boolean)"
		case strings.HasPrefix(m[1], "number"):
			detail += ": quote it (YAML reads an unquoted number as a number)"
		}
	}
	return &Error{Origin: origin, Field: path, Detail: detail}
}

// jsonPath drops from a decoder's field path the Go names of embedded structs, which the JSON does
// not have ("livenessProbe.ProbeHandler.exec" is "livenessProbe.exec" in a manifest: v1.Probe
// embeds its handler inline). The API's JSON names all begin in lower case; Go's type names do not.
func jsonPath(path string) string {
	fields := strings.Split(path, ".")
	kept := fields[:0]
	for _, f := range fields {
		if f != "" && !unicode.IsUpper(rune(f[0])) {
			kept = append(kept, f)
		}
	}
	return strings.Join(kept, ".")
}

// indexPath returns path, a decoder's field path without list indices, with the indices of the
// value the error was about: the first value in doc on that path whose JSON kind is got (the
// decoder's "number", "number 99999999999", "string", "array", "object" or "bool"). Every value on
// one path is decoded into one Go type, so every value of that kind there is wrong, and the first
// in the lists' order is the one the decoder reported (a map's values are taken in key order). If
// doc has no such value, path is returned as it is.
func indexPath(doc []byte, path, got string) string {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return path
	}
	if at, ok := findKind(v, strings.Split(path, "."), got); ok {
		return strings.TrimPrefix(at, ".")
	}
	return path
}

// findKind finds the first value of kind got along fields in v, through any lists on the way, and
// returns its path from v: ".field" for each field, "[i]" for each list index, "[key]" for a map's
// key (as the API's field paths).
func findKind(v any, fields []string, got string) (string, bool) {
	if len(fields) == 0 {
		return kindAt(v, got)
	}
	switch v := v.(type) {
	case []any:
		for i, e := range v {
			if at, ok := findKind(e, fields, got); ok {
				return fmt.Sprintf("[%d]%s", i, at), true
			}
		}
	case map[string]any:
		if e, ok := v[fields[0]]; ok {
			if at, ok := findKind(e, fields[1:], got); ok {
				return "." + fields[0] + at, true
			}
		}
	}
	return "", false
}

// kindAt finds the value of kind got at the end of the decoder's path, which ends at a field: one of
// the field's list elements or map values (in key order), else the field's value itself. A list
// where a string belongs and a list inside a list of strings read alike; the second is the likelier.
func kindAt(v any, got string) (string, bool) {
	switch v := v.(type) {
	case []any:
		for i, e := range v {
			if isKind(e, got) {
				return fmt.Sprintf("[%d]", i), true
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if isKind(v[k], got) {
				return "[" + k + "]", true
			}
		}
	}
	return "", isKind(v, got)
}

// isKind reports whether v, as encoding/json decodes it with UseNumber, is of the kind the decoder's
// type errors name got.
func isKind(v any, got string) bool {
	switch v := v.(type) {
	case json.Number:
		return got == "number" || got == "number "+v.String()
	case string:
		return got == "string"
	case []any:
		return got == "array"
	case map[string]any:
		return got == "object"
	case bool:
		return got == "bool"
	}
	return false
}

// jsonTypeName says what a Go type looks like in a manifest; named API types (v1.PullPolicy is a
// string, v1.Container an object) are shown as they are.
func jsonTypeName(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map["):
		return "an object"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "a boolean"
	case strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "uint"):
		return "an integer"
	default:
		return strings.TrimPrefix(goType, "*")
	}
}

// OneLine folds a multi-line message (the YAML parser lists its problems one per line) into one
// line, so every printed error starts with "error: <file>" and greps as one.
func OneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	var b strings.Builder
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if b.Len() > 0 {
			if strings.HasSuffix(b.String(), ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(part)
	}
	return b.String()
}
