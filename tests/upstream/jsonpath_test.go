package upstream

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
