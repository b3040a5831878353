package kubectl

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/util/jsonpath"
)

// JSONPath is kubectl's -o jsonpath=TEMPLATE (cli-runtime's JSONPathPrinter, with kubectl's
// default --allow-missing-template-keys): the template run on the object's JSON form.
type JSONPath struct {
	template string
	j        *jsonpath.JSONPath
}

// NewJSONPath parses the template as kubectl does.
func NewJSONPath(template string) (*JSONPath, error) {
	j := jsonpath.New("out").AllowMissingKeys(true)
	if err := j.Parse(template); err != nil {
		return nil, fmt.Errorf("error parsing jsonpath %s, %v", template, err)
	}
	return &JSONPath{template: template, j: j}, nil
}

// Print writes the template's result for obj (any value encoding/json takes) to w, with no
// newline after it, as kubectl's.
func (p *JSONPath) Print(w io.Writer, obj any) error {
	data, err := asJSON(obj)
	if err != nil {
		return err
	}
	if err := p.j.Execute(w, data); err != nil {
		return fmt.Errorf("error executing jsonpath %q: %v", p.template, err)
	}
	return nil
}

// CustomColumns is kubectl's -o custom-columns=HEADER:PATH,... (kubectl's CustomColumnsPrinter
// on the objects kubectl get reads: their JSON form).
type CustomColumns struct {
	headers []string
	paths   []*jsonpath.JSONPath
	header  bool
}

// relaxedPath is kubectl's RelaxedJSONPathExpression: name.name, .name.name, {name.name} and
// {.name.name} all mean {.name.name}.
var relaxedPath = regexp.MustCompile(`^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`)

// relaxed is kubectl's RelaxedJSONPathExpression ("" stays "").
func relaxed(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	m := relaxedPath.FindStringSubmatch(path)
	if m == nil {
		return "", fmt.Errorf("unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'")
	}
	return "{." + m[1] + m[2] + "}", nil
}

// NewCustomColumns parses the spec as kubectl does; header false is --no-headers.
func NewCustomColumns(spec string, header bool) (*CustomColumns, error) {
	if spec == "" {
		return nil, fmt.Errorf("custom-columns format specified but no custom columns given")
	}
	c := &CustomColumns{header: header}
	for ix, part := range strings.Split(spec, ",") {
		col := strings.SplitN(part, ":", 2)
		if len(col) != 2 {
			return nil, fmt.Errorf("unexpected custom-columns spec: %s, expected <header>:<json-path-expr>", part)
		}
		path, err := relaxed(col[1])
		if err != nil {
			return nil, err
		}
		j := jsonpath.New(fmt.Sprintf("column%d", ix)).AllowMissingKeys(true)
		if err := j.Parse(path); err != nil {
			return nil, err
		}
		c.headers, c.paths = append(c.headers, col[0]), append(c.paths, j)
	}
	return c, nil
}

// Print writes a row per object (its header first, unless --no-headers) through kubectl's
// tabwriter: each column the path's values joined by ",", "<none>" for none.
func (c *CustomColumns) Print(w io.Writer, objs []any) error {
	tw := NewTabWriter(w)
	if c.header {
		fmt.Fprintln(tw, strings.Join(c.headers, "\t"))
	}
	for _, obj := range objs {
		data, err := asJSON(obj)
		if err != nil {
			return err
		}
		cells := make([]string, len(c.paths))
		for ix, p := range c.paths {
			results, err := p.FindResults(data)
			if err != nil {
				return err
			}
			var values []string
			if len(results) == 0 || len(results[0]) == 0 {
				values = append(values, "<none>")
			}
			for _, r := range results {
				for _, v := range r {
					values = append(values, escapeTerminal(fmt.Sprint(v.Interface())))
				}
			}
			cells[ix] = strings.Join(values, ",")
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// asJSON is obj's JSON form as an unstructured object holds it (what kubectl's printers query):
// maps, slices and scalars, integers as int64 (encoding/json's float64 would print a priority
// of 2000001000 as 2.000001e+09).
func asJSON(obj any) (any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var data any
	if err := utiljson.Unmarshal(b, &data); err != nil {
		return nil, err
	}
	return data, nil
}
