package probes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
)

// probeExec runs an exec probe through the CommandRunner (kubelet's exec prober with the
// ExecProbeTimeout gate on, as it is locked in 1.35).
func (p *Prober) probeExec(ctx context.Context, action *v1.ExecAction, t Target, timeout time.Duration) (Outcome, error) {
	var env []v1.EnvVar
	if t.Container != nil {
		env = t.Container.Env
	}
	cmd := ExpandCommand(action.Command, env)
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, probeTimeoutKey{}, timeout), timeout)
	defer cancel()

	var out limitWriter
	err := p.runner.RunInContainer(ctx, t.ContainerID, cmd, &out)
	output := out.String()
	if err == nil {
		return Outcome{Result: Success, Output: output}, nil
	}
	if errors.Is(err, ErrCommandTimedOut) {
		// kubelet (1.25+): the timeout error's text is the output.
		return Outcome{Result: Failure, Output: err.Error(), Reason: ReasonTimeout}, nil
	}
	if code, ok := errorsAsExitCode(err); ok {
		if code == 0 {
			return Outcome{Result: Success, Output: output}, nil
		}
		return Outcome{Result: Failure, Output: output, Reason: ReasonExitCode}, nil
	}
	// kubelet: (Unknown, "", err) — the command could not be run, so the attempt was not made.
	if exhausted(err) { // no process, pipe or memory for it: the prober's own exhaustion
		out, err := exhaustedOutcome(err)
		return out, fmt.Errorf("exec probe %q: %w", strings.Join(cmd, " "), err)
	}
	return Outcome{Result: Unknown, Reason: ReasonError}, fmt.Errorf("exec probe %q: %w", strings.Join(cmd, " "), err)
}

// limitWriter keeps the first MaxOutputLength bytes written to it and silently discards the rest
// (reporting every write as complete, so a flooding command is never blocked or broken by it).
// The zero value is ready to use; it is not safe for concurrent writes.
type limitWriter struct {
	buf []byte
}

func (w *limitWriter) Write(p []byte) (int, error) {
	take := min(MaxOutputLength-len(w.buf), len(p))
	if take <= 0 {
		return len(p), nil
	}
	if need := len(w.buf) + take; need > cap(w.buf) {
		grown := make([]byte, len(w.buf), min(MaxOutputLength, max(2*cap(w.buf), need, 512)))
		copy(grown, w.buf)
		w.buf = grown
	}
	w.buf = append(w.buf, p[:take]...)
	return len(p), nil
}

// discardPool holds scratch buffers for reading output past the cap.
var discardPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// ReadFrom reads r to EOF, keeping what fits and discarding the rest through a small pooled
// buffer; io.Copy uses it, so copying a command's output never allocates a 32 KiB copy buffer.
func (w *limitWriter) ReadFrom(r io.Reader) (int64, error) {
	var (
		total   int64
		discard *[]byte
	)
	defer func() {
		if discard != nil {
			discardPool.Put(discard)
		}
	}()
	for {
		var (
			n   int
			err error
		)
		if room := MaxOutputLength - len(w.buf); room > 0 {
			if cap(w.buf) == len(w.buf) {
				grown := make([]byte, len(w.buf), min(MaxOutputLength, max(2*cap(w.buf), 512)))
				copy(grown, w.buf)
				w.buf = grown
			}
			n, err = r.Read(w.buf[len(w.buf):cap(w.buf)])
			w.buf = w.buf[:len(w.buf)+n]
		} else {
			if discard == nil {
				discard = discardPool.Get().(*[]byte)
			}
			n, err = r.Read(*discard)
		}
		total += int64(n)
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func (w *limitWriter) String() string { return string(w.buf) }

// ExpandCommand substitutes $(VAR) references in cmd from env exactly as kubelet's
// ExpandContainerCommandOnlyStatic does: every env entry maps its name to its literal value (an entry
// using valueFrom maps to ""; later entries win), "$$" is an escaped "$", and references to names not
// in env, unterminated "$(" and a "$" before any other character are left as written. An empty cmd
// returns nil.
func ExpandCommand(cmd []string, env []v1.EnvVar) []string {
	if len(cmd) == 0 {
		return nil
	}
	vars := make(map[string]string, len(env))
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	out := make([]string, 0, len(cmd))
	for _, s := range cmd {
		out = append(out, expand(s, vars))
	}
	return out
}

// expand implements kubelet's (forked from Go's os.Expand) $(VAR) expansion for one string.
func expand(input string, vars map[string]string) string {
	if !strings.Contains(input, "$") {
		return input
	}
	var b strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != '$' || cursor+1 >= len(input) {
			continue
		}
		b.WriteString(input[checkpoint:cursor])
		rest := input[cursor+1:]
		advance := 1
		switch rest[0] {
		case '$': // escaped operator
			b.WriteByte('$')
		case '(':
			end := strings.IndexByte(rest[1:], ')')
			if end < 0 { // incomplete reference: keep "$(" and go on after it
				b.WriteString("$(")
				break
			}
			name := rest[1 : 1+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			advance = end + 2
		default: // "$" not starting a reference: keep it and the next byte
			b.WriteByte('$')
			b.WriteByte(rest[0])
		}
		cursor += advance
		checkpoint = cursor + 1
	}
	b.WriteString(input[checkpoint:])
	return b.String()
}
