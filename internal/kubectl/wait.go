package kubectl

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/jsonpath"
)

// WaitFor is one --for of `kubectl wait`: a condition (Condition, its wanted Status), the
// object's deletion (Delete), its creation (Create), or a field's value (JSONPath: Value, or any
// value when Value is "").
type WaitFor struct {
	Condition, Status string
	Delete, Create    bool
	JSONPath          *jsonpath.JSONPath
	Value             string
}

// ParseWaitFor reads --for as kubectl wait does: "delete", "create" (any case), or
// "condition=NAME" (Status "true") or "condition=NAME=VALUE". node has no jsonpath.
func ParseWaitFor(s string) (WaitFor, error) {
	switch strings.ToLower(s) {
	case "delete":
		return WaitFor{Delete: true}, nil
	case "create":
		return WaitFor{Create: true}, nil
	}
	if name, ok := strings.CutPrefix(s, "condition="); ok {
		w := WaitFor{Condition: name, Status: "true"}
		if i := strings.Index(name, "="); i != -1 {
			w.Condition, w.Status = name[:i], name[i+1:]
		}
		return w, nil
	}
	if input, ok := strings.CutPrefix(s, "jsonpath="); ok {
		return parseJSONPathWait(input)
	}
	return WaitFor{}, fmt.Errorf("unrecognized condition: %q", s)
}

// parseJSONPathWait reads --for=jsonpath='{.status.phase}'=Running as kubectl's
// processJSONPathInput does: split on single '=' ("==" is the filter operator, kept), the path
// relaxed as custom-columns' are, the value unquoted.
func parseJSONPathWait(input string) (WaitFor, error) {
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(input); i++ {
		switch {
		case input[i] == '=' && i+1 < len(input) && input[i+1] == '=':
			cur.WriteString("==")
			i++
		case input[i] == '=':
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(input[i])
		}
	}
	parts = append(parts, cur.String())
	if len(parts) > 2 {
		return WaitFor{}, fmt.Errorf("jsonpath wait format must be --for=jsonpath='{.status.readyReplicas}'=3 or --for=jsonpath='{.status.readyReplicas}'")
	}
	path, err := relaxed(parts[0])
	if err != nil {
		return WaitFor{}, err
	}
	if path == "" {
		return WaitFor{}, fmt.Errorf("jsonpath expression cannot be empty")
	}
	j := jsonpath.New("wait").AllowMissingKeys(true)
	if err := j.Parse(path); err != nil {
		return WaitFor{}, err
	}
	w := WaitFor{JSONPath: j}
	if len(parts) == 2 {
		if w.Value = strings.Trim(parts[1], `'"`); w.Value == "" {
			return WaitFor{}, fmt.Errorf("jsonpath wait has to have a value after equal sign, like --for=jsonpath='{.status.readyReplicas}'=3")
		}
	}
	return w, nil
}

// JSONPathMet is kubectl wait's check of --for=jsonpath on a pod (its JSON form, as an
// unstructured object): the path finds one value, a scalar, equal to Value as text (any value
// when Value is ""); a path that finds several values or an object or list is an error.
func JSONPathMet(p *v1.Pod, w WaitFor) (bool, error) {
	data, err := asJSON(p)
	if err != nil {
		return false, err
	}
	results, err := w.JSONPath.FindResults(data)
	if err != nil {
		return false, err
	}
	if len(results) == 0 || len(results[0]) == 0 {
		return false, nil
	}
	if len(results) > 1 {
		return false, fmt.Errorf("given jsonpath expression matches more than one list")
	}
	if len(results[0]) > 1 {
		return false, fmt.Errorf("given jsonpath expression matches more than one value")
	}
	if w.Value == "" {
		return true, nil
	}
	v := results[0][0].Interface()
	switch v.(type) {
	case map[string]any, []any:
		return false, fmt.Errorf("jsonpath leads to a nested object or list which is not supported")
	}
	return strings.TrimSpace(fmt.Sprintf("%v", v)) == strings.TrimSpace(w.Value), nil
}

// ConditionMet is kubectl wait's check of --for=condition on a pod: the first condition of that
// type (any case) has the wanted status (any case), unless it was observed for an older
// generation of the pod than the current one (then not yet).
func ConditionMet(p *v1.Pod, w WaitFor) bool {
	for _, c := range p.Status.Conditions {
		if !strings.EqualFold(string(c.Type), w.Condition) {
			continue
		}
		if p.Generation != 0 {
			observed := c.ObservedGeneration
			if observed == 0 {
				observed = p.Status.ObservedGeneration
			}
			if observed != 0 && observed < p.Generation {
				return false
			}
		}
		return strings.EqualFold(string(c.Status), w.Status)
	}
	return false
}
