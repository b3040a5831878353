package server

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/internal/describe"
	"github.com/probeactor/probeactor/messages"
)

// /probes/{namespace}/{name} serves the pod's workers' states, asked by the pod's UID; it is there
// only when the server has a source for them.
func TestProbesRoute(t *testing.T) {
	env := newEnv(t)
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var asked types.UID
	base, _ := env.start(t, Options{Source: env.src, Metrics: env.reg, Probes: env.reg,
		ProbeStates: func(_ context.Context, uid types.UID) ([]messages.ProbeState, error) {
			asked = uid
			if uid != "u1" {
				return nil, errors.New("unexpected pod")
			}
			return []messages.ProbeState{{Key: messages.ProbeKey{PodUID: uid, Container: "app", Type: messages.Liveness},
				ContainerID: "proc://1", Published: messages.Success, HasPublished: true, Streak: 2, StreakResult: messages.Failure,
				LastResult: messages.Failure, LastAt: at, Running: true, Started: true}}, nil
		}})
	code, body := get(t, base+"/probes/default/web")
	require.Equal(t, 200, code, body)
	assert.Equal(t, types.UID("u1"), asked)
	var list describe.List
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	assert.Equal(t, []describe.Probe{{Container: "app", Type: "Liveness", Live: true, ContainerID: "proc://1", Published: "Success",
		Streak: 2, StreakResult: "Failure", LastResult: "Failure", LastAt: at, Running: true, Started: true}}, list.Items)

	code, body = get(t, base+"/probes/default/nope")
	assert.Equal(t, 404, code)
	assert.Contains(t, body, "pod default/nope not found")
	code, _ = get(t, base+"/probes/Default/web")
	assert.Equal(t, 400, code)

	plain, _ := newEnv(t).start(t, Options{})
	code, _ = get(t, plain+"/probes/default/web")
	assert.Equal(t, 404, code, "no probe states without a source")
}
