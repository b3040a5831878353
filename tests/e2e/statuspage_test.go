package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/probeactor/probeactor/internal/logtest"
)

// screenshotEnv names a PNG file to write the page to once the demo's restart shows (make
// screenshot writes docs/statuspage.png this way).
const screenshotEnv = "PROBEACTOR_SCREENSHOT"

// pageState is what the test reads from the page's DOM in the browser.
type pageState struct {
	Pods     []string          `json:"pods"`
	Probes   []string          `json:"probes"` // "<container>/<kind>/<handler>"
	Restarts map[string]int    `json:"restarts"`
	Killing  bool              `json:"killing"`
	Marked   bool              `json:"marked"`
	Cells    map[string]int    `json:"cells"` // "<container>/<kind>/<outcome>" → coloured cells
	Last     map[string]string `json:"last"`
}

const readPage = `(() => {
  const q = (s, el) => [...(el || document).querySelectorAll(s)];
  const cells = {}, last = {};
  for (const row of q('tr[data-probe]')) {
    const key = row.closest('[data-container]').dataset.container + '/' + row.dataset.probe;
    last[key] = row.dataset.last;
    for (const c of q('.cell', row)) { const k = key + '/' + c.classList[1]; cells[k] = (cells[k] || 0) + 1; }
  }
  return {
    pods: q('[data-pod]').map(e => e.dataset.pod),
    probes: q('tr[data-probe]').map(e => e.closest('[data-container]').dataset.container + '/' + e.dataset.probe + '/' + e.dataset.handler),
    restarts: Object.fromEntries(q('[data-container]').map(e => [e.dataset.container, +e.dataset.restarts])),
    killing: q('tr.event').some(e => e.dataset.reason === 'Killing'),
    marked: window.__probeactorTest === true,
    cells, last,
  };
})()`

// TestStatusPageInChromium runs `node run` with no manifest (the embedded demo, as `make run` does)
// and loads its status page in a real headless Chromium: the pod, its containers and every probe
// kind and handler appear; then, without the test reloading anything, the page's own refresh shows
// the api container's restart (its gRPC liveness probe fails at 20 s), the Killing event, and the
// failed attempts that led to it in the liveness strip.
func TestStatusPageInChromium(t *testing.T) {
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed, and this test drives a real headless Chromium: run `make browser` "+
			"(or `apt-get install chromium` on Debian) and run the test again (%v)", err)
	}
	t.Parallel()

	var browserLog logtest.Buffer
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.NoSandbox, // the test may run as root (CI containers), where Chromium's sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 1000),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.CombinedOutput(&browserLog),
	)...)
	defer cancelAlloc() // kills Chromium and waits for it
	bctx, cancelBrowser := chromedp.NewContext(allocCtx,
		chromedp.WithErrorf(func(f string, a ...any) { fmt.Fprintf(&browserLog, "chromedp: "+f+"\n", a...) }))
	defer cancelBrowser()
	defer func() {
		if t.Failed() {
			t.Logf("browser output:\n%s", browserLog.String())
		}
	}()
	bctx, cancelTimeout := context.WithTimeout(bctx, 3*time.Minute)
	defer cancelTimeout()
	// Chromium starts before the demo does: on a busy machine its start-up alone has taken over
	// the 20 s the page has to show api before its restart.
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate("about:blank")), "start Chromium")

	n := startNode(t, "") // no manifest: the embedded demo
	// startNode returns once the HTTP API answers, which node starts before its pods: a page
	// loaded then lists none (seen under coverage instrumentation).
	n.eventually("demo", func(v1.Pod) bool { return true }, "the demo pod is served")
	url := n.base + "/"
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(url)), "load %s", url)
	read := func() (pageState, error) { return chromedp.Run(bctx, chromedp.Evaluate[pageState](readPage)) }
	first, err := read()
	require.NoError(t, err)
	assert.Equal(t, []string{"default/demo"}, first.Pods)
	assert.Subset(t, first.Probes, []string{
		"web/startup/http", "web/readiness/http", "web/liveness/tcp", "api/readiness/exec", "api/liveness/grpc",
	}, "every container and probe kind, with its handler")
	assert.Zero(t, first.Restarts["api"], "nothing restarted yet")

	// Mark this document: a later read that finds no mark reads a document the page's own meta
	// refresh loaded.
	_, err = chromedp.Run(bctx, chromedp.Evaluate[bool](`window.__probeactorTest = true`))
	require.NoError(t, err)

	var last pageState
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for !(last.Restarts["api"] >= 1 && last.Killing) {
		select {
		case <-bctx.Done():
			t.Fatalf("the page never showed api's restart and Killing event (last read: %+v): %v", last, bctx.Err())
		case <-tick.C:
		}
		s, err := read()
		if err != nil { // the page is being replaced by its refresh: read the next one
			continue
		}
		last = s
	}
	assert.False(t, last.Marked, "the restart was shown by a document the page's refresh loaded, not the first one")
	assert.GreaterOrEqual(t, last.Cells["api/liveness/failure"], 3, "the failed attempts that restarted api are in its strip: %v", last.Cells)
	assert.Positive(t, last.Cells["web/readiness/success"], "%v", last.Cells)
	assert.Positive(t, last.Cells["web/startup/failure"], "the startup probe failed for its first ~6 s: %v", last.Cells)

	if path := os.Getenv(screenshotEnv); path != "" {
		require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(url)))
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, png, 0o644))
		t.Logf("wrote %s (%d bytes)", path, len(png))
	}
}
