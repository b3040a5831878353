package statuspage

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probeactor/probeactor/messages"
)

// Each container shows its current instance's time to started and to ready; an adopted one says
// it was not measured; a failing Startups source leaves the rest of the page.
func TestPageShowsTimeToStartedAndReady(t *testing.T) {
	pod := demoLikePod()
	var asked []types.UID
	startups := func(_ context.Context, uids ...types.UID) (map[types.UID][]messages.ContainerStartup, error) {
		asked = uids
		return map[types.UID][]messages.ContainerStartup{"u1": {
			{Container: "web", Started: true, StartedAfter: 6*time.Second + 340*time.Millisecond, Ready: true, ReadyAfter: 72 * time.Second},
			{Container: "api", Started: true, StartedAfter: 40 * time.Millisecond},
			{Container: "proxy", Adopted: true},
		}}, nil
	}
	srv := serve(t, Options{Source: &fakeSource{pods: []v1.Pod{pod}}, Attempts: NewRecorder(time.Now), Startups: startups})
	resp, body := get(t, srv.URL)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, []types.UID{"u1"}, asked, "one query for every pod shown")
	assert.Contains(t, body, `started after <b class="started-after">6.3s</b>`)
	assert.Contains(t, body, `ready after <b class="ready-after">1m12s</b>`)
	assert.Contains(t, body, `started after <b class="started-after">40ms</b>`)
	assert.Contains(t, body, `started after <b class="started-after">adopted, not measured</b>`)
	assert.Equal(t, 1, strings.Count(body, `class="ready-after"`), "api is not ready yet, proxy not measured")

	failing := serve(t, Options{Source: &fakeSource{pods: []v1.Pod{pod}}, Attempts: NewRecorder(time.Now),
		Startups: func(context.Context, ...types.UID) (map[types.UID][]messages.ContainerStartup, error) {
			return nil, errors.New("tree stopped")
		}})
	resp, body = get(t, failing.URL)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, `data-container="web"`)
	assert.NotContains(t, body, "started after")
}
