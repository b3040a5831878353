package kubeletstyle

import (
	"sync"
	"time"

	"github.com/probeactor/probeactor/messages"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// updatesBuffer is kubelet's results channel capacity (make(chan Update, 20)).
const updatesBuffer = 20

// Update is kubelet's results.Update: one cached result changed.
type Update struct {
	ContainerID messages.ContainerID
	Result      messages.Result
	PodUID      types.UID
}

// resultsManager is kubelet's results.Manager: a lock-guarded cache that publishes changes on a
// bounded channel with a blocking send.
type resultsManager struct {
	mu      sync.RWMutex
	cache   map[messages.ContainerID]messages.Result
	updates chan Update
	quit    <-chan struct{} // closed by Kubelet.Stop: unblocks a pending send (kubelet never stops)
	// onBlocked, if set, is told how long a Set waited for room in the channel (study instrumentation).
	onBlocked func(time.Duration)
}

func newResultsManager(quit <-chan struct{}, onBlocked func(time.Duration)) *resultsManager {
	return &resultsManager{
		cache:     make(map[messages.ContainerID]messages.Result),
		updates:   make(chan Update, updatesBuffer),
		quit:      quit,
		onBlocked: onBlocked,
	}
}

func (m *resultsManager) Get(id messages.ContainerID) (messages.Result, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	r, ok := m.cache[id]
	return r, ok
}

// Set caches result and, only when it is new or changed, sends an update; the send blocks while 20
// updates are pending, holding the calling worker (kubelet's behaviour).
func (m *resultsManager) Set(id messages.ContainerID, result messages.Result, pod *v1.Pod) {
	if !m.setInternal(id, result) {
		return
	}
	u := Update{ContainerID: id, Result: result, PodUID: pod.UID}
	if m.onBlocked != nil {
		select {
		case m.updates <- u:
			return
		default:
			start := time.Now()
			defer func() { m.onBlocked(time.Since(start)) }()
		}
	}
	select {
	case m.updates <- u:
	case <-m.quit:
	}
}

func (m *resultsManager) setInternal(id messages.ContainerID, result messages.Result) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	prev, exists := m.cache[id]
	if !exists || prev != result {
		m.cache[id] = result
		return true
	}
	return false
}

// Remove drops the cached result without an update.
func (m *resultsManager) Remove(id messages.ContainerID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.cache, id)
}
