package upstream

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cliprinters "k8s.io/cli-runtime/pkg/printers"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"

	"github.com/probeactor/probeactor/internal/kubectl"
)

// TestGetPodsTableIsKubectls: `node get pods`' whole table, header, alignment and all, is what
// kubectl 1.37 prints for the same pods, byte for byte: the server's table (printPod) printed by
// kubectl's table printer (cli-runtime's HumanReadablePrinter through its tabwriter), with and
// without -o wide, -A's NAMESPACE and --show-labels, on 2,000 random lists of 1-5 pods. (The
// NODE column a fleet aggregator's -A adds is node's own; the cells themselves are
// TestGetPodsIsKubectls'.)
func TestGetPodsTableIsKubectls(t *testing.T) {
	t.Parallel()
	gen := printers.NewTableGenerator().With(printersinternal.AddHandlers)
	r := rand.New(rand.NewPCG(73, 79))
	namespaces := []string{"default", "kube-system", "a-much-longer-namespace"}
	for i := range 2000 {
		now := time.Now()
		var pods []v1.Pod
		internal := &core.PodList{}
		for j := range 1 + r.IntN(5) {
			p := randomPrintedPod(r, now)
			p.Name = pickOf(r, "web", "db-0", "a-pod-with-a-long-name-7f9c")
			p.Name += string(rune('a' + j))
			p.Namespace = pickOf(r, namespaces...)
			if r.IntN(2) == 0 {
				p.Labels = map[string]string{"app": p.Name, "tier": pickOf(r, "front", "back")}
			}
			pods = append(pods, *p)
			var ip core.Pod
			require.NoError(t, legacyscheme.Scheme.Convert(p, &ip, nil))
			internal.Items = append(internal.Items, ip)
		}
		cols := kubectl.Columns{Namespace: r.IntN(2) == 0, Wide: r.IntN(2) == 0, Labels: r.IntN(3) == 0}
		var theirs bytes.Buffer
		at := clockOf(t, now, func() {
			theirs.Reset()
			table, err := gen.GenerateTable(internal, printers.GenerateOptions{Wide: cols.Wide})
			require.NoError(t, err)
			p := cliprinters.NewTablePrinter(cliprinters.PrintOptions{WithNamespace: cols.Namespace, Wide: cols.Wide, ShowLabels: cols.Labels})
			table.TypeMeta = metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}
			require.NoError(t, p.PrintObj(table, &theirs))
		})
		var ours bytes.Buffer
		require.NoError(t, kubectl.PrintPodColumns(&ours, pods, at, cols))
		if !assert.Equal(t, theirs.String(), ours.String(), "list %d, %+v", i, cols) {
			t.FailNow()
		}
	}
}
