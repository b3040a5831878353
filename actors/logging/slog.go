package logging

import (
	"context"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
)

// NewSlogHandler returns a slog.Handler that writes to l, so that libraries logging with log/slog
// (protoactor) end up in the project's hclog logger.
//
// Levels map to the nearest hclog level at or below them (slog Debug → Debug, Info → Info,
// Warn → Warn, Error and above → Error, below Debug → Trace); Enabled follows l's level. Attributes
// become hclog key/value pairs; groups (WithGroup or slog.Group values) become dotted key prefixes
// ("group.key"). LogValuers are resolved; empty attributes are dropped and empty-key groups inlined,
// as the slog.Handler contract asks. The record's time and source are not used: hclog stamps its own.
func NewSlogHandler(l hclog.Logger) slog.Handler {
	return &slogHandler{l: l}
}

type slogHandler struct {
	l      hclog.Logger
	prefix string // "a.b." for WithGroup("a").WithGroup("b")
}

// Level maps a slog level to an hclog level.
func Level(l slog.Level) hclog.Level {
	switch {
	case l < slog.LevelDebug:
		return hclog.Trace
	case l < slog.LevelInfo:
		return hclog.Debug
	case l < slog.LevelWarn:
		return hclog.Info
	case l < slog.LevelError:
		return hclog.Warn
	default:
		return hclog.Error
	}
}

func (h *slogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return Level(l) >= h.l.GetLevel()
}

func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	args := make([]any, 0, 2*r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		args = appendAttr(args, h.prefix, a)
		return true
	})
	h.l.Log(Level(r.Level), r.Message, args...)
	return nil
}

func (h *slogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	args := make([]any, 0, 2*len(attrs))
	for _, a := range attrs {
		args = appendAttr(args, h.prefix, a)
	}
	return &slogHandler{l: h.l.With(args...), prefix: h.prefix}
}

func (h *slogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &slogHandler{l: h.l, prefix: h.prefix + name + "."}
}

// appendAttr flattens a into key/value pairs with dotted group prefixes.
func appendAttr(args []any, prefix string, a slog.Attr) []any {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return args
	}
	if a.Value.Kind() == slog.KindGroup {
		group := a.Value.Group()
		if len(group) == 0 {
			return args
		}
		p := prefix
		if a.Key != "" {
			p = prefix + a.Key + "."
		}
		for _, g := range group {
			args = appendAttr(args, p, g)
		}
		return args
	}
	return append(args, prefix+a.Key, a.Value.Any())
}

// SystemOption routes an ActorSystem's log output into l, as the subsystem "protoactor" with the
// system's id bound once:
//
//	sys := actor.NewActorSystem(logging.SystemOption(log))
func SystemOption(l hclog.Logger) actor.ConfigOption {
	return actor.WithLoggerFactory(func(sys *actor.ActorSystem) *slog.Logger {
		return slog.New(NewSlogHandler(l.Named("protoactor").With("system", sys.ID)))
	})
}
