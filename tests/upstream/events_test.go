package upstream

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
	kubectlevents "k8s.io/kubectl/pkg/cmd/events"

	"github.com/probeactor/probeactor/internal/kubectl"
)

// TestEventsIsKubectls: on 3,000 random event lists (normal and warning, counted and not, series,
// event times without timestamps, zero times, pods and nodes, namespaces, messages with spaces
// around them and terminal escapes), `node events` prints what kubectl 1.37's `kubectl events`
// prints, byte for byte: its sort (SortableEvents), its printer (EventPrinter, with and without
// NAMESPACE and headers) through its tabwriter (cli-runtime's GetNewTabWriter).
func TestEventsIsKubectls(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(67, 71))
	for i := range 3000 {
		now := time.Now()
		events := randomEventList(r, now)
		allNamespaces, noHeaders := r.IntN(2) == 0, r.IntN(4) == 0

		theirEvents := append([]v1.Event(nil), events...)
		var theirs bytes.Buffer
		at := clockOf(t, now, func() {
			theirs.Reset()
			sorted := kubectlevents.SortableEvents(theirEvents)
			sortStable(sorted)
			w := printers.GetNewTabWriter(&theirs)
			require.NoError(t, kubectlevents.NewEventPrinter(noHeaders, allNamespaces).PrintObj(&v1.EventList{Items: theirEvents}, w))
			require.NoError(t, w.Flush())
		})
		ours := append([]v1.Event(nil), events...)
		kubectl.SortEvents(ours)
		var b bytes.Buffer
		require.NoError(t, kubectl.PrintEvents(kubectl.NewTabWriter(&b), ours, at, allNamespaces, !noHeaders))
		if !assert.Equal(t, theirs.String(), b.String(), "list %d", i) {
			t.FailNow()
		}
	}
}

// sortStable sorts kubectl's events with its own Less, stably, as SortEvents does: kubectl's
// sort.Sort is not stable, so events with the same time may come out in either order there.
func sortStable(list kubectlevents.SortableEvents) {
	for i := 1; i < len(list); i++ {
		for j := i; j > 0 && list.Less(j, j-1); j-- {
			list.Swap(j, j-1)
		}
	}
}

func randomEventList(r *rand.Rand, now time.Time) []v1.Event {
	ago := func(max int) time.Time { return now.Add(-time.Duration(r.IntN(max)) * time.Second) }
	var out []v1.Event
	for i := range r.IntN(6) {
		e := v1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e%d", i), Namespace: pickOf(r, "default", "prod", "kube-system")},
			InvolvedObject: v1.ObjectReference{Kind: pickOf(r, "Pod", "Node"), Name: pickOf(r, "web", "db-7", "n1")},
			Type:           pickOf(r, v1.EventTypeNormal, v1.EventTypeWarning), Reason: pickOf(r, "Started", "Unhealthy", "BackOff", "Killing"),
			Message: pickOf(r, "Container started", "  Liveness probe failed: HTTP probe failed with statuscode: 500 ", "Back-off restarting failed container app",
				"bad \x1b[31mred\x1b[0m\rline", ""),
			Count: int32(pickOf(r, 0, 1, 2, 17))}
		switch r.IntN(8) {
		case 0: // the events.k8s.io shape: an event time, a series, no timestamps
			e.EventTime = metav1.NewMicroTime(ago(4000))
			if r.IntN(2) == 0 {
				e.Series = &v1.EventSeries{Count: int32(2 + r.IntN(40)), LastObservedTime: metav1.NewMicroTime(ago(60))}
			}
		case 1: // no time at all
		default:
			first := ago(100000)
			e.FirstTimestamp = metav1.NewTime(first)
			if r.IntN(6) != 0 {
				e.LastTimestamp = metav1.NewTime(first.Add(time.Duration(r.Int64N(int64(now.Sub(first))+1)) / time.Second * time.Second))
			}
		}
		out = append(out, e)
	}
	return out
}
