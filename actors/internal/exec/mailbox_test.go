package exec

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

// idleOwner never runs its mailbox: what is posted stays queued.
type idleOwner struct{ scheduled int }

func (o *idleOwner) Schedule(*Mailbox)      { o.scheduled++ }
func (o *idleOwner) Signal(any) bool        { return false }
func (o *idleOwner) Failed(any, any)        {}
func (o *idleOwner) RestartsOnResume() bool { return false }

// A mailbox counts what waits in it into its Depth, and what it hands on out of it.
func TestMailboxDepthCounts(t *testing.T) {
	var depth atomic.Int64
	owner := &idleOwner{}
	m := &Mailbox{Owner: owner, Depth: &depth}
	var got []any
	m.invoker = invokerFunc(func(msg any) { got = append(got, msg) })
	for i := range 3 {
		m.Post(i)
	}
	assert.EqualValues(t, 3, depth.Load())
	assert.EqualValues(t, 3, m.UserMessageCount())
	assert.Equal(t, 1, owner.scheduled, "scheduled once while it has work")
	m.Run()
	assert.Equal(t, []any{0, 1, 2}, got)
	assert.Zero(t, depth.Load())
}

// invokerFunc is an actor.MessageInvoker that hands user messages to a func.
type invokerFunc func(msg any)

func (f invokerFunc) InvokeUserMessage(msg any) { f(msg) }
func (f invokerFunc) InvokeSystemMessage(any)   {}
func (f invokerFunc) EscalateFailure(any, any)  {}
