package kubectl

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestSelect(t *testing.T) {
	pod := func(ns, name string, l map[string]string) v1.Pod {
		return v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}}
	}
	pods := []v1.Pod{
		pod("default", "web", map[string]string{"app": "web", "tier": "front"}),
		pod("default", "db", map[string]string{"app": "db"}),
		pod("prod", "web", map[string]string{"app": "web"}),
		pod("prod", "cache", nil),
	}
	sel := func(s string) labels.Selector {
		l, err := labels.Parse(s)
		require.NoError(t, err)
		return l
	}
	key := func(ps []v1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		s       Selection
		want    []string
		missing []string
	}{
		{"everything", Selection{}, []string{"default/web", "default/db", "prod/web", "prod/cache"}, nil},
		{"a namespace", Selection{Namespace: "prod"}, []string{"prod/web", "prod/cache"}, nil},
		{"a selector across namespaces", Selection{Selector: sel("app=web")}, []string{"default/web", "prod/web"}, nil},
		{"a set selector in a namespace", Selection{Namespace: "default", Selector: sel("app in (web,db),tier!=front")}, []string{"default/db"}, nil},
		{"an existence selector", Selection{Selector: sel("!app")}, []string{"prod/cache"}, nil},
		{"names in the order given", Selection{Names: []string{"db", "web"}, Namespace: "default"}, []string{"default/db", "default/web"}, nil},
		{"a name in another namespace is missing", Selection{Names: []string{"cache", "web"}, Namespace: "default"}, []string{"default/web"}, []string{"cache"}},
		{"a name in every namespace", Selection{Names: []string{"web"}}, []string{"default/web", "prod/web"}, nil},
		{"nothing matches", Selection{Selector: sel("app=nope")}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, missing := Select(pods, tc.s)
			assert.Equal(t, tc.want, key(got))
			assert.Equal(t, tc.missing, missing)
		})
	}

	nodes := []v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}}}, {ObjectMeta: metav1.ObjectMeta{Name: "n2"}}}
	got, _ := Select(nodes, Selection{Selector: sel("zone=a")})
	require.Len(t, got, 1)
	assert.Equal(t, "n1", got[0].Name)
}

func TestShowLabels(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pods := []v1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute)), Labels: map[string]string{"tier": "front", "app": "web"}}, Status: v1.PodStatus{Phase: v1.PodPending}},
		{ObjectMeta: metav1.ObjectMeta{Name: "bare", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))}, Status: v1.PodStatus{Phase: v1.PodPending}},
	}
	var b bytes.Buffer
	require.NoError(t, PrintPodColumns(&b, pods, now, Columns{Labels: true}))
	assert.Equal(t, ""+
		"NAME   READY   STATUS    RESTARTS   AGE   LABELS\n"+
		"web    0/0     Pending   0          60s   app=web,tier=front\n"+
		"bare   0/0     Pending   0          60s   <none>\n", b.String())

	b.Reset()
	nodes := []v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)), Labels: map[string]string{"zone": "a"}}}}
	require.NoError(t, PrintNodes(&b, nodes, now, true))
	assert.Equal(t, ""+
		"NAME   STATUS    AGE   LABELS\n"+
		"n1     Unknown   60m   zone=a\n", b.String())
}
