package supervision_test

import (
	"fmt"
	"time"

	"github.com/probeactor/probeactor/actors/internal/supervision"
)

// The pure core: a child that keeps failing is restarted after 1 s, 2 s, 4 s, … and given up on at
// the fifth failure within a minute.
func ExampleTracker() {
	p := supervision.Policy{Initial: time.Second, Max: 4 * time.Second, Multiplier: 2, MaxFailures: 5, Window: time.Minute}
	if err := p.Validate(); err != nil {
		panic(err)
	}
	tr := supervision.NewTracker(p)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 5 {
		delay, giveUp := tr.Failure(now, 0)
		fmt.Println(delay, giveUp)
		now = now.Add(delay + time.Second) // restarted, then failed again a second later
	}
	// Output:
	// 1s false
	// 2s false
	// 4s false
	// 4s false
	// 0s true
}
