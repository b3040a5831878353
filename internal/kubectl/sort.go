package kubectl

import (
	"fmt"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/util/jsonpath"
)

// SortBy is kubectl get's --sort-by=PATH: objects ordered by the first value the path finds in
// each one's JSON form, as kubectl's sorter compares them (integers and floats as numbers, strings
// as quantities when both parse as one, else as text; an object without the value first).
type SortBy struct {
	field string
	j     *jsonpath.JSONPath
}

// NewSortBy parses the path as kubectl does (relaxed: .status.phase is {.status.phase}).
func NewSortBy(field string) (*SortBy, error) {
	path, err := relaxed(field)
	if err != nil {
		return nil, err
	}
	j := jsonpath.New("sorting").AllowMissingKeys(true)
	if err := j.Parse(path); err != nil {
		return nil, fmt.Errorf("sorting error: %v", err)
	}
	return &SortBy{field: path, j: j}, nil
}

// Sort orders items (stably: kubectl's sort is not, so equal keys may come in either order
// there) by the field. A field of a type kubectl cannot sort (an object, a list, a boolean) is an
// error naming it.
func Sort[T any](s *SortBy, items []T) error {
	keys := make([]reflect.Value, len(items))
	for i := range items {
		data, err := asJSON(&items[i])
		if err != nil {
			return err
		}
		results, err := s.j.FindResults(data)
		if err != nil {
			return err
		}
		if len(results) > 0 && len(results[0]) > 0 {
			keys[i] = results[0][0]
		}
	}
	var failed error
	less := func(a, b reflect.Value) bool {
		switch { // without the value first (kubectl's says "less" for two without: no order at all)
		case !a.IsValid():
			return b.IsValid()
		case !b.IsValid():
			return false
		}
		l, err := lessValue(a.Interface(), b.Interface())
		if err != nil && failed == nil {
			failed = fmt.Errorf("field %s is an unsortable type: %v", s.field, err)
		}
		return l
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(x, y int) bool { return less(keys[idx[x]], keys[idx[y]]) })
	if failed != nil {
		return failed
	}
	sorted := make([]T, len(items))
	for i, j := range idx {
		sorted[i] = items[j]
	}
	copy(items, sorted)
	return nil
}

// lessValue is kubectl's isLess for the values of an unstructured object.
func lessValue(a, b any) (bool, error) {
	switch {
	case a == nil && b == nil:
		return false, nil
	case a == nil:
		return true, nil
	case b == nil:
		return false, nil
	}
	switch x := a.(type) {
	case int64:
		if y, ok := b.(int64); ok {
			return x < y, nil
		}
	case float64:
		if y, ok := b.(float64); ok {
			return x < y, nil
		}
	case string:
		if y, ok := b.(string); ok {
			qx, errx := resource.ParseQuantity(x)
			qy, erry := resource.ParseQuantity(y)
			if errx != nil || erry != nil {
				return x < y, nil
			}
			return qx.Cmp(qy) < 0, nil
		}
	default:
		return false, fmt.Errorf("%T", a)
	}
	return false, fmt.Errorf("%T against %T", a, b)
}
