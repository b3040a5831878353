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
	c := NewCore(Backoff{Initial: time.Millisecond, Max: time.Millisecond})
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
	c := NewCore(Backoff{Initial: 100 * time.Millisecond, Max: 400 * time.Millisecond, Rand: func() float64 { return 0 }})
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
	c := NewCore(Backoff{Initial: time.Second, Max: time.Second})
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
		c := NewCore(Backoff{Initial: time.Second, Max: time.Second})
		epoch := connect(t, c)
		send := c.SourceBatch(epoch, Batch{Snapshot: true}, func() {}, t0)
		es := c.Acked(send[0].Token, ack(st), nil, t0)
		assert.Equal(t, []EffectKind{Unsubscribe, RetryAfter}, kinds(es), st.String())
		assert.Contains(t, es[1].Why, st.String())
	}
}

func TestHeartbeatOnlyWhenIdleAndBatchesWaitBehindIt(t *testing.T) {
	c := NewCore(Backoff{Initial: time.Second, Max: time.Second})
	assert.Nil(t, c.HeartbeatDue(t0, time.Second), "not connected")
	epoch := connect(t, c)
	send := c.SourceBatch(epoch, Batch{Snapshot: true}, func() {}, t0)
	assert.Nil(t, c.HeartbeatDue(t0.Add(time.Hour), time.Second), "a request is in flight")
	c.Acked(send[0].Token, ack(fleetv1.AckStatus_ACK_STATUS_APPLIED), nil, t0)
	assert.Nil(t, c.HeartbeatDue(t0.Add(999*time.Millisecond), time.Second), "sent recently")
	hb := c.HeartbeatDue(t0.Add(time.Second), time.Second)
	require.Equal(t, []EffectKind{SendHeartbeat}, kinds(hb))

	acked := false
	assert.Nil(t, c.SourceBatch(epoch, Batch{Results: []messages.ResultChanged{{Container: "b"}}}, func() { acked = true }, t0), "held behind the heartbeat")
	es := c.Acked(hb[0].Token, ack(fleetv1.AckStatus_ACK_STATUS_APPLIED), nil, t0.Add(time.Second))
	require.Equal(t, []EffectKind{SendBatch}, kinds(es), "a heartbeat's ack acknowledges nothing at the source")
	assert.Equal(t, "b", es[0].Batch.Results[0].Container)
	es = c.Acked(es[0].Token, ack(fleetv1.AckStatus_ACK_STATUS_APPLIED), nil, t0)
	es[0].Ack()
	assert.True(t, acked)

	hb = c.HeartbeatDue(t0.Add(3*time.Second), time.Second)
	es = c.Acked(hb[0].Token, ack(fleetv1.AckStatus_ACK_STATUS_RESYNC), nil, t0)
	assert.Equal(t, []EffectKind{Subscribe}, kinds(es), "an idle node learns of a restarted aggregator")
}
