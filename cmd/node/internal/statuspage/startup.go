package statuspage

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/messages"
)

// Startups is how long each running container instance took to start and become ready (the probe
// tree's Tree.ContainerStartups), asked once per page for every pod shown.
type Startups func(ctx context.Context, uids ...types.UID) (map[types.UID][]messages.ContainerStartup, error)

// addStartups fills each container's time to started and to ready from startups (by pod UID and
// container name): its current instance's, when known.
func (v *view) addStartups(startups map[types.UID][]messages.ContainerStartup) {
	for i := range v.Pods {
		p := &v.Pods[i]
		for j := range p.Containers {
			c := &p.Containers[j]
			for _, s := range startups[types.UID(p.UID)] {
				if s.Container != c.Name {
					continue
				}
				switch {
				case s.Adopted:
					c.StartedAfter = "adopted, not measured"
				default:
					if s.Started {
						c.StartedAfter = startupText(s.StartedAfter)
					}
					if s.Ready {
						c.ReadyAfter = startupText(s.ReadyAfter)
					}
				}
			}
		}
	}
}

// startupText is a time to started or ready: milliseconds under a second, tenths of a second
// under 10 s, whole seconds above.
func startupText(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
