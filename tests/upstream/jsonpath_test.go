package upstream

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	cliprinters "k8s.io/cli-runtime/pkg/printers"
	kubectlget "k8s.io/kubectl/pkg/cmd/get"

	"github.com/probeactor/probeactor/internal/kubectl"
)

// TestJSONPathAndCustomColumnsAreKubectls: `node get -o jsonpath=` and `-o custom-columns=` print
// what kubectl 1.37's printers print for the same objects as kubectl get reads them (unstructured),
// byte for byte: cli-runtime's JSONPathPrinter and kubectl's CustomColumnsPrinter, on 2,000 random
// pod lists with templates and column specs of every kind (ranges, filters, maps, numbers,
// timestamps, missing keys).
func TestJSONPathAndCustomColumnsAreKubectls(t *testing.T) {
	t.Parallel()
	templates := []string{
		"{.items[*].metadata.name}",
		`{range .items[*]}{.metadata.name}{"\t"}{.status.phase}{"\n"}{end}`,
		"{.items[0].spec.containers[*].name}",
		"{.items[*].status.containerStatuses[*].restartCount}",
		"{.items[*].metadata.labels}",
		`{.items[?(@.status.phase=="Running")].metadata.name}`,
		"{.items[*].spec.containers[0].livenessProbe}",
		"{.items[*].metadata.creationTimestamp}",
		"{.nope.deeper}",
		`{.items[*].status.conditions[?(@.type=="Ready")].status}`,
		"{.items[*].spec.priority}",
		"{.kind} {.apiVersion} {.items[*].status.podIPs}",
		`{range .items[*]}{.metadata.annotations}{"|"}{end}`,
	}
	specs := []string{
		"NAME:.metadata.name,READY:.status.containerStatuses[*].ready,RESTARTS:.status.containerStatuses[*].restartCount",
		"NODE:spec.nodeName,IP:{.status.podIP},IPS:{.status.podIPs[*].ip}",
		"LABELS:.metadata.labels,PERIOD:.spec.containers[0].readinessProbe.periodSeconds",
		"MISSING:.nope,CREATED:.metadata.creationTimestamp,PRIORITY:.spec.priority",
		"CONDITIONS:.status.conditions[*].type,OWNER:.metadata.ownerReferences[0].name",
	}
	r := rand.New(rand.NewPCG(97, 101))
	for i := range 2000 {
		now := time.Now()
		list := &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
		for range 1 + r.IntN(4) {
			p := randomPrintedPod(r, now)
			decorate(r, p, now)
			if r.IntN(3) == 0 { // system-node-critical's: an integer a float64 would print as 2.000001e+09
				p.Spec.Priority = ptr(int32(2000001000))
			}
			list.Items = append(list.Items, *p)
		}
		raw, err := json.Marshal(list)
		require.NoError(t, err)
		var ulist unstructured.UnstructuredList
		require.NoError(t, ulist.UnmarshalJSON(raw))

		template := pickOf(r, templates...)
		their, err := cliprinters.NewJSONPathPrinter(template)
		require.NoError(t, err, template)
		their.AllowMissingKeys(true) // kubectl's --allow-missing-template-keys default
		var theirs, ours bytes.Buffer
		theirErr := their.PrintObj(&unstructured.Unstructured{Object: ulist.UnstructuredContent()}, &theirs)
		p, err := kubectl.NewJSONPath(template)
		require.NoError(t, err, template)
		ourErr := p.Print(&ours, list)
		require.Equal(t, theirErr == nil, ourErr == nil, "list %d, %s: %v / %v", i, template, theirErr, ourErr)
		if !assert.Equal(t, theirs.String(), ours.String(), "list %d, %s", i, template) {
			t.FailNow()
		}

		spec, header := pickOf(r, specs...), r.IntN(4) != 0
		cols, err := kubectlget.NewCustomColumnsPrinterFromSpec(spec, nil, !header)
		require.NoError(t, err)
		theirs.Reset()
		w := cliprinters.GetNewTabWriter(&theirs)
		for j := range ulist.Items {
			require.NoError(t, cols.PrintObj(&ulist.Items[j], w))
		}
		require.NoError(t, w.Flush())
		c, err := kubectl.NewCustomColumns(spec, header)
		require.NoError(t, err)
		ours.Reset()
		objs := make([]any, len(list.Items))
		for j := range list.Items {
			objs[j] = &list.Items[j]
		}
		require.NoError(t, c.Print(&ours, objs))
		if !assert.Equal(t, theirs.String(), ours.String(), "list %d, %s", i, spec) {
			t.FailNow()
		}
	}
}

// TestSortByIsKubectls: `node get --sort-by` puts objects in the order kubectl 1.37's sorter does
// (kubectl's RuntimeSort over the unstructured objects kubectl get reads): the same sequence of
// keys, on 2,000 random lists sorted by names, namespaces, creation times, priorities (integers
// up to system-node-critical's) and quantities.
func TestSortByIsKubectls(t *testing.T) {
	t.Parallel()
	fields := []string{".metadata.name", "{.metadata.namespace}", "metadata.creationTimestamp", ".spec.priority", ".metadata.labels.size"}
	r := rand.New(rand.NewPCG(103, 107))
	for i := range 2000 {
		now := time.Now()
		var pods []v1.Pod
		var objs []runtime.Object
		for range 1 + r.IntN(8) {
			p := randomPrintedPod(r, now)
			p.Name = pickOf(r, "web", "db", "cache", "a", "zeta", "10", "2", "1m")
			p.Namespace = pickOf(r, "default", "prod", "kube-system")
			p.Spec.Priority = ptr(int32(pickOf(r, 0, 9, 20, 100, 2000001000, -5)))              // 9 < 20 < 100 only as numbers
			p.Labels = map[string]string{"size": pickOf(r, "100Mi", "1Gi", "500m", "2", "0.5")} // quantities
			p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
			pods = append(pods, *p)
			raw, err := json.Marshal(p)
			require.NoError(t, err)
			u := &unstructured.Unstructured{}
			require.NoError(t, u.UnmarshalJSON(raw))
			objs = append(objs, u)
		}
		field := pickOf(r, fields...)
		relaxed, err := kubectlget.RelaxedJSONPathExpression(field)
		require.NoError(t, err)
		sort.Sort(kubectlget.NewRuntimeSort(relaxed, objs))
		by, err := kubectl.NewSortBy(field)
		require.NoError(t, err)
		require.NoError(t, kubectl.Sort(by, pods))

		key := func(o any) string {
			var b bytes.Buffer
			p, err := kubectl.NewJSONPath(relaxed)
			require.NoError(t, err)
			require.NoError(t, p.Print(&b, o))
			return b.String()
		}
		var theirs, ours []string
		for j := range objs {
			theirs = append(theirs, key(objs[j].(*unstructured.Unstructured).Object))
			ours = append(ours, key(&pods[j]))
		}
		if !assert.Equal(t, theirs, ours, "list %d by %s", i, field) {
			t.FailNow()
		}
	}
}
