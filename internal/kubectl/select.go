package kubectl

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// Selection is what `kubectl get KIND [NAME...]` asks for: the named objects (in the order given)
// in Namespace, or, without names, every object in Namespace ("" for all, and for nodes, which
// have none) whose labels Selector matches (nil: all). A name matches every object of that name
// in Namespace: a fleet aggregator lists a pod once per node that runs it.
type Selection struct {
	Names     []string
	Namespace string
	Selector  labels.Selector
	// Fields, when set, must match too (ParseFieldSelector; PodFields or NodeFields of each object).
	Fields fields.Selector
}

// Select returns the objects s asks for, and the names it asks for that items lack.
func Select[T any, PT interface {
	*T
	GetName() string
	GetNamespace() string
	GetLabels() map[string]string
}](items []T, s Selection) (chosen []T, missing []string) {
	inNamespace := func(o PT) bool { return s.Namespace == "" || o.GetNamespace() == s.Namespace }
	if len(s.Names) > 0 {
		for _, name := range s.Names {
			found := false
			for i := range items {
				if o := PT(&items[i]); o.GetName() == name && inNamespace(o) {
					chosen, found = append(chosen, items[i]), true
				}
			}
			if !found {
				missing = append(missing, name)
			}
		}
		return chosen, missing
	}
	for i := range items {
		o := PT(&items[i])
		if inNamespace(o) && (s.Selector == nil || s.Selector.Matches(labels.Set(o.GetLabels()))) &&
			(s.Fields == nil || s.Fields.Matches(fieldsOf(o))) {
			chosen = append(chosen, items[i])
		}
	}
	return chosen, nil
}

func fieldsOf(o any) fields.Set {
	switch o := o.(type) {
	case *v1.Pod:
		return PodFields(o)
	case *v1.Node:
		return NodeFields(o)
	}
	return fields.Set{}
}
