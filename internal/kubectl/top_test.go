package kubectl

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// kubectl's top tables, cell by cell: every cell ends in a tab, so the last column is padded too
// (tests/upstream holds them to kubectl's own printer on random metrics).
func TestPrintTop(t *testing.T) {
	q := resource.MustParse
	var out bytes.Buffer
	PrintTopPods(&out, []TopPod{{Namespace: "default", Pod: "web", CPU: q("312500001n"), Memory: q("120Mi")},
		{Namespace: "jobs", Pod: "batch", CPU: q("0"), Memory: q("1")}}, true, false, false, true)
	assert.Equal(t, "NAMESPACE   NAME    CPU(cores)   MEMORY(bytes)   \n"+
		"default     web     313m         120Mi           \n"+
		"jobs        batch   0m           0Mi             \n"+
		"                    ________     ________        \n"+
		"                    313m         120Mi           \n", out.String(), "millicores rounded up; the sum of the quantities")

	out.Reset()
	PrintTopNodes(&out, []TopNode{
		{Name: "n1", CPU: q("1"), Memory: q("2Gi"), Available: v1.ResourceList{v1.ResourceCPU: q("3"), v1.ResourceMemory: q("8Gi")}},
		{Name: "n2", CPU: q("250m"), Memory: q("1Gi")},
		{Name: "n3", Unknown: true}}, false)
	assert.Equal(t, "NAME   CPU(cores)   CPU(%)      MEMORY(bytes)   MEMORY(%)   \n"+
		"n1     1000m        33%         2048Mi          25%         \n"+
		"n2     250m         1024Mi      \n"+
		"n3     <unknown>    <unknown>   <unknown>       <unknown>   \n", out.String(), "truncated percentages; none of what a node lacks")

	out.Reset()
	PrintTopPods(&out, nil, true, true, false, true)
	PrintTopNodes(&out, nil, false)
	assert.Empty(t, out.String(), "nothing for no rows, as kubectl")
}
