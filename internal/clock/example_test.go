package clock_test

import (
	"fmt"
	"time"

	"github.com/probeactor/probeactor/internal/clock"
)

// A worker reschedules itself every period on one shared Scheduler; the test drives time by hand.
func ExampleScheduler() {
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := clock.NewScheduler(fake)
	defer s.Stop()

	start := fake.Now()
	var tick func()
	tick = func() {
		fmt.Println("tick at", fake.Now().Sub(start))
		s.After(time.Second, tick) // in an actor: root.Send(pid, probeTick{})
	}
	s.After(clock.Jitter(time.Second, func() float64 { return 0.25 }), tick) // kubelet-style initial jitter

	fake.Advance(3 * time.Second)
	fmt.Println("pending:", s.Len())
	// Output:
	// tick at 250ms
	// tick at 1.25s
	// tick at 2.25s
	// pending: 1
}
