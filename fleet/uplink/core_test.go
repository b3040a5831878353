package uplink

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/wire/fleetv1"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func kinds(es []Effect) []EffectKind {
	out := make([]EffectKind, 0, len(es))
	for _, e := range es {
		out = append(out, e.Kind)
	}
	return out
}

func ack(st fleetv1.AckStatus) *fleetv1.Ack { return &fleetv1.Ack{Status: st} }

// connect runs a core through Start and a successful Hello; it returns the subscription epoch.
func connect(t *testing.T, c *Core) uint64 {
	t.Helper()
	es := c.Start()
	require.Equal(t, []EffectKind{SendHello}, kinds(es))
	es = c.HelloDone(es[0].Token, nil)
	require.Equal(t, []EffectKind{Watch, Subscribe}, kinds(es))
	return es[1].Epoch
}

func TestBackoffIsCappedExponentialWithJitter(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second, Rand: func() float64 { return 0 }}
	var got []time.Duration
	for n := range 7 {
		got = append(got, b.Delay(n))
	}
	assert.Equal(t, []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}, got, "lower bound d/2")
	b.Rand = func() float64 { return 0.999999 }
	assert.InDelta(t, float64(time.Second), float64(b.Delay(10)), float64(time.Millisecond), "upper bound: the cap")
	assert.Equal(t, 75*time.Millisecond, Backoff{Initial: 100 * time.Millisecond, Max: time.Second}.Delay(0), "no Rand: the middle")
}

func TestCreditIsEndToEnd(t *testing.T) {
	c := NewCore(Backoff{Initial: time.Millisecond, Max: time.Millisecond}, 1)
	epoch := connect(t, c)
	acked := 0
	sourceAck := func() { acked++ }

	es := c.SourceBatch(epoch, Batch{Snapshot: true}, sourceAck, t0)
	require.Equal(t, []EffectKind{SendBatch}, kinds(es))
	assert.Equal(t, uint64(1), es[0].Seq)
	assert.True(t, es[0].Batch.Snapshot)
	assert.Zero(t, acked, "the source is not acknowledged before the aggregator")

	es = c.Acked(es[0].Token, ack(fleetv1.AckStatus_ACK_STATUS_APPLIED), nil, t0)
	require.Equal(t, []EffectKind{AckSource}, kinds(es))
	es[0].Ack()
	assert.Equal(t, 1, acked)

	es = c.SourceBatch(epoch, Batch{Results: []messages.ResultChanged{{Container: "a"}}}, sourceAck, t0)
	require.Equal(t, uint64(2), es[0].Seq, "seq increases by one per batch")
	es = c.Acked(es[0].Token, ack(fleetv1.AckStatus_ACK_STATUS_DUPLICATE), nil, t0)
	assert.Equal(t, []EffectKind{AckSource}, kinds(es), "a duplicate was applied before: ack the source")
}

func TestFailureDropsTheSessionAndBacksOff(t *testing.T) {
	c := NewCore(Backoff{Initial: 100 * time.Millisecond, Max: 400 * time.Millisecond, Rand: func() float64 { return 0 }}, 1)
	epoch := connect(t, c)
	send := c.SourceBatch(epoch, Batch{Snapshot: true}, func() { t.Error("acked a batch the aggregator never applied") }, t0)

	es := c.Acked(send[0].Token, nil, errors.New("future: timeout"), t0)
	require.Equal(t, []EffectKind{Unsubscribe, RetryAfter}, kinds(es))
	assert.Equal(t, 50*time.Millisecond, es[1].Delay)
	assert.Contains(t, es[1].Why, "timeout")
	assert.Nil(t, c.SourceBatch(epoch, Batch{}, nil, t0), "the old subscription's batches are ignored")
	assert.Nil(t, c.Acked(send[0].Token, ack(fleetv1.AckStatus_ACK_STATUS_APPLIED), nil, t0), "a late answer to a dropped request is ignored")
	assert.Nil(t, c.Retry(es[1].Token+1), "a stale timer")

	// Hello keeps failing: the delay doubles up to the cap.
	var delays []time.Duration
	retry := es[1]
	for range 4 {
		h := c.Retry(retry.Token)
		require.Equal(t, []EffectKind{SendHello}, kinds(h))
		r := c.HelloDone(h[0].Token, errors.New("future: dead letter"))
		require.Equal(t, []EffectKind{RetryAfter}, kinds(r))
		delays = append(delays, r[0].Delay)
		retry = r[0]
	}
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond}, delays)

	// Reconnected: a new subscription (a new snapshot), seq goes on, the back-off resets after an ack.
	h := c.Retry(retry.Token)
	es = c.HelloDone(h[0].Token, nil)
	require.Equal(t, []EffectKind{Watch, Subscribe}, kinds(es))
	assert.Greater(t, es[1].Epoch, epoch)
	send = c.SourceBatch(es[1].Epoch, Batch{Snapshot: true}, func() {}, t0)
	assert.Equal(t, uint64(2), send[0].Seq, "seq is never reused within an incarnation")
	c.Acked(send[0].Token, ack(fleetv1.AckStatus_ACK_STATUS_APPLIED), nil, t0)
	lost := c.Lost()
	require.Equal(t, []EffectKind{Unsubscribe, RetryAfter}, kinds(lost))
	assert.Equal(t, 50*time.Millisecond, lost[1].Delay, "failures were reset")
	assert.Nil(t, c.Lost(), "already waiting")
}

func TestResyncResubscribesWithoutBackoff(t *testing.T) {
	c := NewCore(Backoff{Initial: time.Second, Max: time.Second}, 1)
	epoch := connect(t, c)
	send := c.SourceBatch(epoch, Batch{Results: []messages.ResultChanged{{Container: "a"}}}, func() { t.Error("acked a dropped batch") }, t0)
	es := c.Acked(send[0].Token, ack(fleetv1.AckStatus_ACK_STATUS_RESYNC), nil, t0)
	require.Equal(t, []EffectKind{Subscribe}, kinds(es))
	assert.Equal(t, epoch+1, es[0].Epoch)
	assert.True(t, c.Connected())
	assert.Nil(t, c.SourceBatch(epoch, Batch{}, nil, t0), "the old subscription is over")
	assert.Equal(t, []EffectKind{SendBatch}, kinds(c.SourceBatch(epoch+1, Batch{Snapshot: true}, func() {}, t0)))
}

func TestStaleOrInvalidIsAFailure(t *testing.T) {
	for _, st := range []fleetv1.AckStatus{fleetv1.AckStatus_ACK_STATUS_STALE, fleetv1.AckStatus_ACK_STATUS_INVALID, fleetv1.AckStatus_ACK_STATUS_UNSPECIFIED} {
		c := NewCore(Backoff{Initial: time.Second, Max: time.Second}, 1)
		epoch := connect(t, c)
		send := c.SourceBatch(epoch, Batch{Snapshot: true}, func() {}, t0)
		es := c.Acked(send[0].Token, ack(st), nil, t0)
		assert.Equal(t, []EffectKind{Unsubscribe, RetryAfter}, kinds(es), st.String())
		assert.Contains(t, es[1].Why, st.String())
		if st == fleetv1.AckStatus_ACK_STATUS_STALE {
			assert.Contains(t, es[1].Why, "it holds a newer incarnation of this node's name (another node runs with the same --node-name, or this host's clock was set back",
				"the log says what makes an incarnation stale")
		}
	}
}

func TestHeartbeatOnlyWhenIdleAndBatchesDoNotWaitForIt(t *testing.T) {
	c := NewCore(Backoff{Initial: time.Second, Max: time.Second}, 1)
	assert.Nil(t, c.HeartbeatDue(t0, time.Second), "not connected")
	epoch := connect(t, c)
	send := c.SourceBatch(epoch, Batch{Snapshot: true}, func() {}, t0)
	assert.Nil(t, c.HeartbeatDue(t0.Add(time.Hour), time.Second), "a batch is in flight")
	c.Acked(send[0].Token, ack(fleetv1.AckStatus_ACK_STATUS_APPLIED), nil, t0)
	assert.Nil(t, c.HeartbeatDue(t0.Add(999*time.Millisecond), time.Second), "sent recently")
	hb := c.HeartbeatDue(t0.Add(time.Second), time.Second)
	require.Equal(t, []EffectKind{SendHeartbeat}, kinds(hb))
	assert.Nil(t, c.HeartbeatDue(t0.Add(time.Hour), time.Second), "a heartbeat is in flight")

	acked := false
	es := c.SourceBatch(epoch, Batch{Results: []messages.ResultChanged{{Container: "b"}}}, func() { acked = true }, t0)
	require.Equal(t, []EffectKind{SendBatch}, kinds(es), "a batch does not wait for a heartbeat")
	batch := es[0]
	assert.Empty(t, c.Acked(hb[0].Token, ack(fleetv1.AckStatus_ACK_STATUS_APPLIED), nil, t0.Add(time.Second)), "a heartbeat's ack acknowledges nothing at the source")
	assert.False(t, acked)
	es = c.Acked(batch.Token, ack(fleetv1.AckStatus_ACK_STATUS_APPLIED), nil, t0)
	require.Equal(t, []EffectKind{AckSource}, kinds(es))
	es[0].Ack()
	assert.True(t, acked)

	hb = c.HeartbeatDue(t0.Add(3*time.Second), time.Second)
	es = c.Acked(hb[0].Token, ack(fleetv1.AckStatus_ACK_STATUS_RESYNC), nil, t0)
	assert.Equal(t, []EffectKind{Subscribe}, kinds(es), "an idle node learns of a restarted aggregator")

	// A heartbeat's failure drops the session like a batch's.
	hb = c.HeartbeatDue(t0.Add(5*time.Second), time.Second)
	es = c.Acked(hb[0].Token, nil, errors.New("future: timeout"), t0)
	assert.Equal(t, []EffectKind{Unsubscribe, RetryAfter}, kinds(es))
}

// windowStep is one event of a window table: a source batch (named by its container), or the
// answer to the batch sent for a name (or the heartbeat, "hb"), and what must follow.
type windowStep struct {
	deliver string            // a batch the source delivers
	answer  string            // the batch (by name) or "hb" whose request is answered
	status  fleetv1.AckStatus // the answer's status (ignored with err)
	err     error
	// expected: the batches sent (by name, with their seq), the source acks called (by name),
	// a resubscription, a failure, and the batches in flight afterwards.
	sent      []string
	seqs      []uint64
	acked     []string
	subscribe bool
	failed    bool
	inFlight  int
}

func TestWindowTable(t *testing.T) {
	const (
		applied   = fleetv1.AckStatus_ACK_STATUS_APPLIED
		duplicate = fleetv1.AckStatus_ACK_STATUS_DUPLICATE
		resync    = fleetv1.AckStatus_ACK_STATUS_RESYNC
		stale     = fleetv1.AckStatus_ACK_STATUS_STALE
	)
	timeout := errors.New("future: timeout")
	for _, tc := range []struct {
		name   string
		window int
		steps  []windowStep
	}{
		{"window 1: one batch at a time, the next is held", 1, []windowStep{
			{deliver: "s", sent: []string{"s"}, seqs: []uint64{1}, inFlight: 1},
			{deliver: "a", inFlight: 1},
			{answer: "s", status: applied, acked: []string{"s"}, sent: []string{"a"}, seqs: []uint64{2}, inFlight: 1},
			{answer: "a", status: applied, acked: []string{"a"}},
		}},
		{"a full window sends at once, answers in order ack in order", 3, []windowStep{
			{deliver: "s", sent: []string{"s"}, seqs: []uint64{1}, inFlight: 1},
			{deliver: "a", sent: []string{"a"}, seqs: []uint64{2}, inFlight: 2},
			{deliver: "b", sent: []string{"b"}, seqs: []uint64{3}, inFlight: 3},
			{deliver: "c", inFlight: 3},
			{answer: "s", status: applied, acked: []string{"s"}, sent: []string{"c"}, seqs: []uint64{4}, inFlight: 3},
			{answer: "a", status: duplicate, acked: []string{"a"}, inFlight: 2},
			{answer: "b", status: applied, acked: []string{"b"}, inFlight: 1},
			{answer: "c", status: applied, acked: []string{"c"}},
		}},
		{"a later batch's APPLIED acknowledges the batches before it, oldest first", 4, []windowStep{
			{deliver: "s", sent: []string{"s"}, seqs: []uint64{1}, inFlight: 1},
			{deliver: "a", sent: []string{"a"}, seqs: []uint64{2}, inFlight: 2},
			{deliver: "b", sent: []string{"b"}, seqs: []uint64{3}, inFlight: 3},
			{answer: "a", status: applied, acked: []string{"s", "a"}, inFlight: 1},
			{answer: "s", status: applied, inFlight: 1}, // late: already covered
			{answer: "s", err: timeout, inFlight: 1},    // a late timeout of a covered batch: no failure
			{answer: "b", status: applied, acked: []string{"b"}},
		}},
		{"a gap: the first RESYNC drops the window and resubscribes, the later ones are stale", 3, []windowStep{
			{deliver: "s", sent: []string{"s"}, seqs: []uint64{1}, inFlight: 1},
			{answer: "s", status: applied, acked: []string{"s"}},
			{deliver: "a", sent: []string{"a"}, seqs: []uint64{2}, inFlight: 1},
			{deliver: "b", sent: []string{"b"}, seqs: []uint64{3}, inFlight: 2},
			{deliver: "c", sent: []string{"c"}, seqs: []uint64{4}, inFlight: 3},
			{deliver: "d", inFlight: 3},                    // held, then dropped with the window
			{answer: "b", status: resync, subscribe: true}, // "a" was lost in transit
			{answer: "c", status: resync},
			{answer: "a", err: timeout},
			{deliver: "s2", sent: []string{"s2"}, seqs: []uint64{5}, inFlight: 1}, // the snapshot: a seq above every batch before
			{answer: "s2", status: applied, acked: []string{"s2"}},
		}},
		{"a timeout in the window drops the session and every batch in flight", 3, []windowStep{
			{deliver: "s", sent: []string{"s"}, seqs: []uint64{1}, inFlight: 1},
			{deliver: "a", sent: []string{"a"}, seqs: []uint64{2}, inFlight: 2},
			{answer: "s", err: timeout, failed: true},
			{answer: "a", status: applied}, // late: the session is gone, the source is not acked
		}},
		{"STALE in the window is a failure", 2, []windowStep{
			{deliver: "s", sent: []string{"s"}, seqs: []uint64{1}, inFlight: 1},
			{deliver: "a", sent: []string{"a"}, seqs: []uint64{2}, inFlight: 2},
			{answer: "a", status: stale, failed: true},
		}},
		{"a heartbeat's RESYNC drops the batches in flight too", 2, []windowStep{
			{deliver: "s", sent: []string{"s"}, seqs: []uint64{1}, inFlight: 1},
			{answer: "s", status: applied, acked: []string{"s"}},
			{answer: "hb", status: resync, subscribe: true}, // sent idle, answered after "a" went out
			{answer: "a", status: applied},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCore(Backoff{Initial: time.Second, Max: time.Second}, tc.window)
			epoch := connect(t, c)
			tokens := map[string]uint64{}
			var acks []string
			var hb []Effect
			for i, st := range tc.steps {
				var es []Effect
				switch {
				case st.deliver != "":
					name := st.deliver
					es = c.SourceBatch(epoch, Batch{Snapshot: name[0] == 's', Results: []messages.ResultChanged{{Container: name}}}, func() { acks = append(acks, name) }, t0)
				case st.answer == "hb":
					// The heartbeat went when idle; a batch went after it; then the answer.
					hb = c.HeartbeatDue(t0.Add(time.Hour), time.Second)
					require.Equal(t, []EffectKind{SendHeartbeat}, kinds(hb), "step %d", i)
					sent := c.SourceBatch(epoch, Batch{Results: []messages.ResultChanged{{Container: "a"}}}, func() { acks = append(acks, "a") }, t0)
					require.Equal(t, []EffectKind{SendBatch}, kinds(sent), "step %d", i)
					tokens["a"] = sent[0].Token
					es = c.Acked(hb[0].Token, ack(st.status), st.err, t0)
				default:
					tok, ok := tokens[st.answer]
					require.True(t, ok, "step %d answers %q, never sent", i, st.answer)
					es = c.Acked(tok, ack(st.status), st.err, t0)
				}
				var sent []string
				var seqs []uint64
				acks = acks[:0]
				subscribed, failed := false, false
				for _, e := range es {
					switch e.Kind {
					case SendBatch:
						name := e.Batch.Results[0].Container
						sent, seqs = append(sent, name), append(seqs, e.Seq)
						tokens[name] = e.Token
					case AckSource:
						e.Ack()
					case Subscribe:
						subscribed = true
						assert.Equal(t, tc.window, e.Window, "step %d: the source is told the window", i)
						epoch = e.Epoch
					case Unsubscribe, RetryAfter:
						failed = true
					default:
						t.Fatalf("step %d: unexpected effect %v", i, e.Kind)
					}
				}
				assert.Equal(t, st.sent, sent, "step %d: sent", i)
				assert.Equal(t, st.seqs, seqs, "step %d: seqs", i)
				if len(st.acked) > 0 {
					assert.Equal(t, st.acked, acks, "step %d: source acks", i)
				} else {
					assert.Empty(t, acks, "step %d: source acks", i)
				}
				assert.Equal(t, st.subscribe, subscribed, "step %d: resubscribed", i)
				assert.Equal(t, st.failed, failed, "step %d: failed", i)
				assert.Equal(t, st.inFlight, c.InFlight(), "step %d: in flight", i)
				assert.LessOrEqual(t, c.InFlight(), tc.window, "step %d: never more than the window", i)
			}
		})
	}
}
