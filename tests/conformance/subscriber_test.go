package conformance

import (
	"sync"

	"github.com/probeactor/probeactor/messages"
)

type key struct {
	id messages.ContainerID
	pt messages.ProbeType
}

// changeLog is what a subscriber observed: the last result per key.
type changeLog struct {
	mu   sync.Mutex
	last map[key]messages.Result
}

func (l *changeLog) record(c Change) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = make(map[key]messages.Result)
	}
	l.last[key{c.ContainerID, c.Type}] = c.Result
}

func (l *changeLog) final() map[key]messages.Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[key]messages.Result, len(l.last))
	for k, v := range l.last {
		out[k] = v
	}
	return out
}
