package logging

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines parses hclog's JSON output, one map per log line.
func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.b.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		delete(m, "@timestamp")
		out = append(out, m)
	}
	return out
}

func jsonLogger(level hclog.Level) (hclog.Logger, *lockedBuffer) {
	buf := &lockedBuffer{}
	return hclog.New(&hclog.LoggerOptions{Name: "test", Level: level, Output: buf, JSONFormat: true}), buf
}

func TestSlogLevelsMapToHclog(t *testing.T) {
	tests := []struct {
		slog slog.Level
		want string
	}{
		{slog.LevelDebug - 4, "trace"},
		{slog.LevelDebug, "debug"},
		{slog.LevelDebug + 1, "debug"},
		{slog.LevelInfo, "info"},
		{slog.LevelWarn, "warn"},
		{slog.LevelError, "error"},
		{slog.LevelError + 4, "error"},
	}
	for _, tc := range tests {
		t.Run(tc.slog.String(), func(t *testing.T) {
			l, buf := jsonLogger(hclog.Trace)
			slog.New(NewSlogHandler(l)).Log(t.Context(), tc.slog, "hello")
			lines := buf.lines(t)
			require.Len(t, lines, 1)
			assert.Equal(t, tc.want, lines[0]["@level"])
			assert.Equal(t, "hello", lines[0]["@message"])
			assert.Equal(t, "test", lines[0]["@module"])
		})
	}
}

func TestSlogEnabledFollowsHclogLevel(t *testing.T) {
	l, buf := jsonLogger(hclog.Warn)
	h := NewSlogHandler(l)
	assert.False(t, h.Enabled(t.Context(), slog.LevelInfo))
	assert.True(t, h.Enabled(t.Context(), slog.LevelWarn))
	assert.True(t, h.Enabled(t.Context(), slog.LevelError))
	logger := slog.New(h)
	logger.Info("dropped")
	logger.Warn("kept")
	lines := buf.lines(t)
	require.Len(t, lines, 1)
	assert.Equal(t, "kept", lines[0]["@message"])
}

type secret string

func (secret) LogValue() slog.Value { return slog.StringValue("redacted") }

func TestSlogAttrsAndGroupsBecomeDottedKeys(t *testing.T) {
	l, buf := jsonLogger(hclog.Trace)
	logger := slog.New(NewSlogHandler(l)).
		With("a", 1).
		WithGroup("g").
		With("b", "two").
		WithGroup("") // no-op per the slog contract
	logger.Info("msg",
		"c", 3,
		slog.Group("h", "d", 4, slog.Group("i", "e", true)),
		slog.Group("empty"),          // dropped
		slog.Group("", "inlined", 5), // empty key: inlined
		slog.Attr{},                  // dropped
		"pw", secret("hunter2"),      // LogValuer resolved
		"err", errors.New("boom"),
		"took", 1500*time.Millisecond,
	)
	lines := buf.lines(t)
	require.Len(t, lines, 1)
	got := lines[0]
	delete(got, "@level")
	delete(got, "@message")
	delete(got, "@module")
	assert.Equal(t, map[string]any{
		"a":         float64(1),
		"g.b":       "two",
		"g.c":       float64(3),
		"g.h.d":     float64(4),
		"g.h.i.e":   true,
		"g.inlined": float64(5),
		"g.pw":      "redacted",
		"g.err":     "boom",
		"g.took":    float64(1500 * time.Millisecond), // hclog JSON writes durations as ns
	}, got)
}

func TestSlogWithAttrsDoesNotLeakIntoParent(t *testing.T) {
	l, buf := jsonLogger(hclog.Trace)
	base := slog.New(NewSlogHandler(l))
	base.With("child", true).Info("one")
	base.WithGroup("g").Info("two", "k", "v")
	base.Info("three")
	lines := buf.lines(t)
	require.Len(t, lines, 3)
	assert.Equal(t, true, lines[0]["child"])
	assert.Equal(t, "v", lines[1]["g.k"])
	_, leaked := lines[2]["child"]
	assert.False(t, leaked)
	assert.False(t, strings.Contains(lines[2]["@message"].(string), "g."))
}
