package uplink

import (
	"time"

	"github.com/probeactor/probeactor/wire/fleetv1"
)

// EffectKind says what the shell must do.
type EffectKind int

const (
	// SendHello: request Hello; answer with Core.HelloDone(Token, …).
	SendHello EffectKind = iota + 1
	// Subscribe: cancel the current source subscription (if any) and start subscription Epoch.
	Subscribe
	// Unsubscribe: cancel the current source subscription.
	Unsubscribe
	// Watch: watch the aggregator's fleet actor (Terminated → Core.Lost).
	Watch
	// SendBatch: request Changes{Seq, Batch}; answer with Core.Acked(Token, …).
	SendBatch
	// SendHeartbeat: request Heartbeat; answer with Core.Acked(Token, …).
	SendHeartbeat
	// AckSource: call Ack, the source's acknowledgement of the batch the aggregator applied.
	AckSource
	// RetryAfter: call Core.Retry(Token) after Delay.
	RetryAfter
)

// Effect is one action the shell performs, in order.
type Effect struct {
	Kind  EffectKind
	Token uint64 // SendHello, SendBatch, SendHeartbeat, RetryAfter: the answer must carry it
	Epoch uint64 // Subscribe
	Seq   uint64 // SendBatch
	Batch Batch  // SendBatch
	Ack   func() // AckSource
	Delay time.Duration
	// Why is a short reason for logs (a retry's cause, a resync's trigger).
	Why string
}

// Backoff is a capped exponential back-off with jitter: the n-th consecutive failure waits a
// uniformly random time in [d/2, d] with d = min(Max, Initial·2ⁿ).
type Backoff struct {
	Initial, Max time.Duration
	// Rand returns a number in [0, 1); injected so tests are deterministic.
	Rand func() float64
}

// Delay returns the wait after the n-th (0-based) consecutive failure.
func (b Backoff) Delay(n int) time.Duration {
	d := b.Initial
	for i := 0; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	r := 0.5
	if b.Rand != nil {
		r = b.Rand()
	}
	return d/2 + time.Duration(r*float64(d/2))
}

type phase int

const (
	waiting   phase = iota // a retry is scheduled
	greeting               // Hello in flight
	connected              // subscribed; batches flow
)

type inflightKind int

const (
	none inflightKind = iota
	batch
	heartbeat
)

// Core is the uplink's every decision, free of actors, time and randomness (both injected): the
// session (Hello, subscription, seq), credit (one request in flight; the source is acknowledged
// only when the aggregator applied the batch) and recovery (capped exponential back-off, a fresh
// snapshot after every reconnect or RESYNC).
type Core struct {
	backoff  Backoff
	phase    phase
	token    uint64 // the current request's or retry's token; answers with another are stale
	epoch    uint64 // the current subscription
	seq      uint64 // last seq sent in this incarnation (never reused)
	failures int    // consecutive failures, for the back-off
	inflight inflightKind
	ack      func() // the source's ack of the batch in flight
	pending  *pendingBatch
	lastSent time.Time
}

type pendingBatch struct {
	b   Batch
	ack func()
}

// NewCore returns a core that has not started.
func NewCore(b Backoff) *Core { return &Core{backoff: b} }

// Start opens the first session.
func (c *Core) Start() []Effect { return c.hello() }

func (c *Core) hello() []Effect {
	c.phase = greeting
	c.token++
	c.inflight, c.ack, c.pending = none, nil, nil
	return []Effect{{Kind: SendHello, Token: c.token}}
}

// HelloDone handles the answer to Hello token: on success the uplink watches the aggregator and
// subscribes to its source (a snapshot comes first).
func (c *Core) HelloDone(token uint64, err error) []Effect {
	if token != c.token || c.phase != greeting {
		return nil
	}
	if err != nil {
		return c.fail("hello: " + err.Error())
	}
	c.phase = connected
	c.epoch++
	return []Effect{{Kind: Watch}, {Kind: Subscribe, Epoch: c.epoch}}
}

// Retry handles the back-off timer token.
func (c *Core) Retry(token uint64) []Effect {
	if token != c.token || c.phase != waiting {
		return nil
	}
	return c.hello()
}

// SourceBatch handles a batch the source delivered on subscription epoch.
func (c *Core) SourceBatch(epoch uint64, b Batch, ack func(), now time.Time) []Effect {
	if epoch != c.epoch || c.phase != connected {
		return nil // an old subscription's batch: the next snapshot covers it
	}
	if c.inflight != none {
		c.pending = &pendingBatch{b: b, ack: ack} // behind a heartbeat; the source waits for ack
		return nil
	}
	return c.send(b, ack, now)
}

func (c *Core) send(b Batch, ack func(), now time.Time) []Effect {
	c.seq++
	c.token++
	c.inflight, c.ack, c.lastSent = batch, ack, now
	return []Effect{{Kind: SendBatch, Token: c.token, Seq: c.seq, Batch: b}}
}

// Acked handles the answer to a batch or heartbeat request token (err: timeout, dead letter).
func (c *Core) Acked(token uint64, a *fleetv1.Ack, err error, now time.Time) []Effect {
	if token != c.token || c.phase != connected || c.inflight == none {
		return nil
	}
	kind := c.inflight
	c.inflight = none
	if err != nil {
		return c.fail("request: " + err.Error())
	}
	switch a.GetStatus() {
	case fleetv1.AckStatus_ACK_STATUS_APPLIED, fleetv1.AckStatus_ACK_STATUS_DUPLICATE:
		c.failures = 0
		var out []Effect
		if kind == batch {
			out = append(out, Effect{Kind: AckSource, Ack: c.ack})
			c.ack = nil
		}
		if p := c.pending; p != nil {
			c.pending = nil
			out = append(out, c.send(p.b, p.ack, now)...)
		}
		return out
	case fleetv1.AckStatus_ACK_STATUS_RESYNC:
		// The aggregator lacks a baseline (it restarted, or a batch was lost): a new subscription
		// starts with a snapshot. Not a failure: no back-off.
		c.ack, c.pending = nil, nil
		c.epoch++
		return []Effect{{Kind: Subscribe, Epoch: c.epoch, Why: "aggregator asked for a snapshot"}}
	default: // STALE, INVALID, unknown: a configuration problem or a bug; retry slowly
		return c.fail("aggregator answered " + a.GetStatus().String())
	}
}

// Lost handles the aggregator's termination (the watch fired).
func (c *Core) Lost() []Effect {
	if c.phase == waiting {
		return nil
	}
	return c.fail("lost the aggregator")
}

// HeartbeatDue sends a heartbeat when connected and idle for at least every.
func (c *Core) HeartbeatDue(now time.Time, every time.Duration) []Effect {
	if c.phase != connected || c.inflight != none || now.Sub(c.lastSent) < every {
		return nil
	}
	c.token++
	c.inflight, c.lastSent = heartbeat, now
	return []Effect{{Kind: SendHeartbeat, Token: c.token}}
}

// fail drops the session: the subscription ends (the source keeps coalescing), and a new Hello
// follows after the back-off.
func (c *Core) fail(why string) []Effect {
	out := []Effect{}
	if c.phase == connected {
		out = append(out, Effect{Kind: Unsubscribe})
		c.epoch++ // late batches of the old subscription are ignored
	}
	c.phase = waiting
	c.inflight, c.ack, c.pending = none, nil, nil
	c.token++
	out = append(out, Effect{Kind: RetryAfter, Token: c.token, Delay: c.backoff.Delay(c.failures), Why: why})
	c.failures++
	return out
}

// Seq returns the last seq sent.
func (c *Core) Seq() uint64 { return c.seq }

// Connected says whether a session is up (Hello answered, not failed since).
func (c *Core) Connected() bool { return c.phase == connected }
