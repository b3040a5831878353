package uplink

import (
	"slices"
	"time"

	"github.com/probeactor/probeactor/wire/fleetv1"
)

// EffectKind says what the shell must do.
type EffectKind int

const (
	// SendHello: request Hello; answer with Core.HelloDone(Token, …).
	SendHello EffectKind = iota + 1
	// Subscribe: cancel the current source subscription (if any) and start subscription Epoch,
	// with at most Window batches unacknowledged.
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
	Kind   EffectKind
	Token  uint64 // SendHello, SendBatch, SendHeartbeat, RetryAfter: the answer must carry it
	Epoch  uint64 // Subscribe
	Window int    // Subscribe
	Seq    uint64 // SendBatch
	Batch  Batch  // SendBatch
	Ack    func() // AckSource
	Delay  time.Duration
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

// flight is a batch sent and not yet answered.
type flight struct {
	token uint64
	ack   func() // the source's ack of this batch
}

// DefaultWindow is the default number of batches in flight per node: one, stop-and-wait. On the
// 2-core benchmark a wider window measured no better p99 (the first change of a burst takes a slot
// alone, the rest still wait a round trip) and costs more batches, hence more CPU, when the cores
// are short; the window is for links whose round trip is long against the rate of changes.
const DefaultWindow = 1

// Core is the uplink's every decision, free of actors, time and randomness (both injected): the
// session (Hello, subscription, seq), credit (a window of batches in flight; the source is
// acknowledged, oldest first, only when the aggregator applied a batch) and recovery (capped
// exponential back-off, a fresh snapshot after every reconnect or RESYNC).
//
// The window: up to Window batches are in flight, in seq order on one stream, so the next change
// need not wait for the round trip of the batch ahead. The aggregator applies a delta only on top
// of seq-1 (and a snapshot is a subscription's first batch), so APPLIED or DUPLICATE for a batch
// means every batch before it in the window was applied too: the answer acknowledges the source
// up to it, oldest first (cumulative, as TCP's), and the earlier batches' own answers, if they
// still come, are then ignored. A gap (a batch lost in transit) makes the aggregator answer RESYNC
// to every later batch; the first RESYNC drops the whole window and resubscribes (a snapshot with
// a higher seq), the rest are ignored. Any failure drops the window with the session.
type Core struct {
	backoff  Backoff
	window   int
	phase    phase
	token    uint64 // last token issued; every request and retry has its own
	hello    uint64 // the Hello in flight (greeting) or the retry pending (waiting)
	epoch    uint64 // the current subscription
	seq      uint64 // last seq sent in this incarnation (never reused)
	failures int    // consecutive failures, for the back-off
	flights  []flight
	held     []pendingBatch // delivered beyond the window (a source breaking its contract)
	beat     uint64         // the heartbeat in flight, 0 when none
	lastSent time.Time
}

type pendingBatch struct {
	b   Batch
	ack func()
}

// NewCore returns a core that has not started; window bounds the batches in flight (< 1: 1).
func NewCore(b Backoff, window int) *Core { return &Core{backoff: b, window: max(1, window)} }

// Window returns the number of batches that may be in flight, which the source is told.
func (c *Core) Window() int { return c.window }

// Start opens the first session.
func (c *Core) Start() []Effect { return c.greet() }

func (c *Core) next() uint64 { c.token++; return c.token }

func (c *Core) greet() []Effect {
	c.phase = greeting
	c.hello = c.next()
	c.drop()
	return []Effect{{Kind: SendHello, Token: c.hello}}
}

// drop forgets every request in flight (their answers, if any come, are stale).
func (c *Core) drop() { c.flights, c.held, c.beat = nil, nil, 0 }

// HelloDone handles the answer to Hello token: on success the uplink watches the aggregator and
// subscribes to its source (a snapshot comes first).
func (c *Core) HelloDone(token uint64, err error) []Effect {
	if token != c.hello || c.phase != greeting {
		return nil
	}
	if err != nil {
		return c.fail("hello: " + err.Error())
	}
	c.phase = connected
	c.epoch++
	return []Effect{{Kind: Watch}, {Kind: Subscribe, Epoch: c.epoch, Window: c.window}}
}

// Retry handles the back-off timer token.
func (c *Core) Retry(token uint64) []Effect {
	if token != c.hello || c.phase != waiting {
		return nil
	}
	return c.greet()
}

// SourceBatch handles a batch the source delivered on subscription epoch: it goes at once, or,
// beyond the window, when a slot frees.
func (c *Core) SourceBatch(epoch uint64, b Batch, ack func(), now time.Time) []Effect {
	if epoch != c.epoch || c.phase != connected {
		return nil // an old subscription's batch: the next snapshot covers it
	}
	if len(c.flights) >= c.window {
		c.held = append(c.held, pendingBatch{b: b, ack: ack})
		return nil
	}
	return c.send(b, ack, now)
}

func (c *Core) send(b Batch, ack func(), now time.Time) []Effect {
	c.seq++
	f := flight{token: c.next(), ack: ack}
	c.flights = append(c.flights, f)
	c.lastSent = now
	return []Effect{{Kind: SendBatch, Token: f.token, Seq: c.seq, Batch: b}}
}

// Acked handles the answer to a batch or heartbeat request token (err: timeout, dead letter).
func (c *Core) Acked(token uint64, a *fleetv1.Ack, err error, now time.Time) []Effect {
	if c.phase != connected || token == 0 {
		return nil
	}
	i := -1
	if token != c.beat {
		i = slices.IndexFunc(c.flights, func(f flight) bool { return f.token == token })
		if i < 0 {
			return nil // stale: an earlier session's, or covered by a later batch's answer
		}
	} else {
		c.beat = 0
	}
	if err != nil {
		return c.fail("request: " + err.Error())
	}
	switch a.GetStatus() {
	case fleetv1.AckStatus_ACK_STATUS_APPLIED, fleetv1.AckStatus_ACK_STATUS_DUPLICATE:
		c.failures = 0
		var out []Effect
		for _, f := range c.flights[:i+1] { // i = -1 (a heartbeat): none
			out = append(out, Effect{Kind: AckSource, Ack: f.ack})
		}
		c.flights = slices.Delete(c.flights, 0, i+1)
		for len(c.held) > 0 && len(c.flights) < c.window {
			p := c.held[0]
			c.held = slices.Delete(c.held, 0, 1)
			out = append(out, c.send(p.b, p.ack, now)...)
		}
		return out
	case fleetv1.AckStatus_ACK_STATUS_RESYNC:
		// The aggregator lacks a baseline (it restarted, or a batch was lost): a new subscription
		// starts with a snapshot. Not a failure: no back-off.
		c.drop()
		c.epoch++
		return []Effect{{Kind: Subscribe, Epoch: c.epoch, Window: c.window, Why: "aggregator asked for a snapshot"}}
	case fleetv1.AckStatus_ACK_STATUS_STALE: // a configuration problem or a clock's; retry slowly
		return c.fail("aggregator answered " + a.GetStatus().String() + ": it holds a newer incarnation of this node's name " +
			"(another node runs with the same --node-name, or this host's clock was set back since that node started)")
	default: // INVALID, unknown: a bug; retry slowly
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

// HeartbeatDue sends a heartbeat when connected and idle (nothing in flight) for at least every.
func (c *Core) HeartbeatDue(now time.Time, every time.Duration) []Effect {
	if c.phase != connected || len(c.flights) > 0 || c.beat != 0 || now.Sub(c.lastSent) < every {
		return nil
	}
	c.beat, c.lastSent = c.next(), now
	return []Effect{{Kind: SendHeartbeat, Token: c.beat}}
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
	c.drop()
	c.hello = c.next()
	out = append(out, Effect{Kind: RetryAfter, Token: c.hello, Delay: c.backoff.Delay(c.failures), Why: why})
	c.failures++
	return out
}

// InFlight returns the number of batches sent and not yet answered.
func (c *Core) InFlight() int { return len(c.flights) }

// Seq returns the last seq sent.
func (c *Core) Seq() uint64 { return c.seq }

// Connected says whether a session is up (Hello answered, not failed since).
func (c *Core) Connected() bool { return c.phase == connected }
