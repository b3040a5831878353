package explain

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Print writes reports as node explain prints them: per pod, each probed container's probes as
// kubectl describe shows them, each followed by what it means in time, then the pod's warnings.
func Print(w io.Writer, reports []Report) error {
	var b strings.Builder
	for i, r := range reports {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "Pod %s/%s\n", r.Namespace, r.Name)
		if len(r.Containers) == 0 {
			b.WriteString("  no probes: nothing to explain\n")
		}
		for _, c := range r.Containers {
			kind := "Container"
			if c.Sidecar {
				kind = "Sidecar"
			}
			fmt.Fprintf(&b, "  %s %s\n", kind, c.Name)
			for _, p := range c.Probes {
				fmt.Fprintf(&b, "    %-10s %s\n", p.Type+":", p.Spec)
				for _, f := range p.Facts {
					b.WriteString("      " + f.What)
					if f.Earliest != 0 || f.Latest != 0 {
						fmt.Fprintf(&b, ": at the earliest %s, at the latest %s", seconds(f.Earliest), seconds(f.Latest))
					}
					b.WriteString("\n")
					if f.Note != "" {
						fmt.Fprintf(&b, "        (%s)\n", f.Note)
					}
				}
			}
		}
		if len(r.Warnings) > 0 {
			b.WriteString("  Warnings:\n")
			for _, wn := range r.Warnings {
				fmt.Fprintf(&b, "    %s: %s\n", wn.Field, wn.Message)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func seconds(s float64) string { return (time.Duration(s * float64(time.Second))).String() }
