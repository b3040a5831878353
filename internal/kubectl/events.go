package kubectl

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/liggitt/tabwriter"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SortEvents orders events as `kubectl events` does (SortableEvents): by the series' last
// observation, else the last timestamp, else the event time. The sort is stable.
func SortEvents(events []v1.Event) {
	sort.SliceStable(events, func(i, j int) bool { return eventTime(&events[i]).Before(eventTime(&events[j])) })
}

func eventTime(e *v1.Event) time.Time {
	if e.Series != nil {
		return e.Series.LastObservedTime.Time
	}
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	return e.EventTime.Time
}

// EventCells are an event's LAST SEEN, TYPE, REASON, OBJECT and MESSAGE at now, as `kubectl
// events` prints them (its EventPrinter): LAST SEEN is "12s (x4 over 3m)" for a repeated event.
// Control characters in the printed fields are escaped as kubectl's printers.EscapeTerminal does.
func EventCells(e *v1.Event, now time.Time) []string {
	return []string{
		eventInterval(e, now),
		escapeTerminal(e.Type),
		escapeTerminal(e.Reason),
		escapeTerminal(e.InvolvedObject.Kind) + "/" + escapeTerminal(e.InvolvedObject.Name),
		escapeTerminal(strings.TrimSpace(e.Message)),
	}
}

// PrintEvents writes `kubectl events`' table to tw (NewTabWriter) and flushes it: the header
// when header is true, NAMESPACE first with allNamespaces. events are printed in the order given
// (SortEvents for kubectl's).
func PrintEvents(tw *tabwriter.Writer, events []v1.Event, now time.Time, allNamespaces, header bool) error {
	if header {
		if allNamespaces {
			fmt.Fprint(tw, "NAMESPACE\t")
		}
		fmt.Fprintln(tw, "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
	}
	for i := range events {
		if allNamespaces {
			fmt.Fprintf(tw, "%s\t", events[i].Namespace)
		}
		fmt.Fprintln(tw, strings.Join(EventCells(&events[i], now), "\t"))
	}
	return tw.Flush()
}

func eventInterval(e *v1.Event, now time.Time) string {
	first := sinceMicro(e.EventTime, now)
	if e.EventTime.IsZero() {
		first = since(e.FirstTimestamp.Time, now)
	}
	switch {
	case e.Series != nil:
		return fmt.Sprintf("%s (x%d over %s)", sinceMicro(e.Series.LastObservedTime, now), e.Series.Count, first)
	case e.Count > 1:
		return fmt.Sprintf("%s (x%d over %s)", since(e.LastTimestamp.Time, now), e.Count, first)
	default:
		return first
	}
}

func sinceMicro(t metav1.MicroTime, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return HumanDuration(now.Sub(t.Time))
}

func since(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return HumanDuration(now.Sub(t))
}

// escapeTerminal is kubectl's printers.EscapeTerminal: ESC and CR made visible, so that an event's
// text cannot drive the terminal.
var escapeTerminal = strings.NewReplacer("\x1b", "^[", "\r", "\\r").Replace

// NewTabWriter is the tabwriter kubectl prints its tables through (cli-runtime's
// GetNewTabWriter): its columns keep their widths across flushes, so a watch's rows stay aligned.
func NewTabWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 6, 4, 3, ' ', tabwriter.RememberWidths)
}
