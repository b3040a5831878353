package logging

import (
	"fmt"
	"runtime/debug"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/hashicorp/go-hclog"
)

// PanicStack returns receiver middleware that logs a panic raised while an actor handles a message,
// with the actor, the message type, the panic value and the goroutine's stack, then re-panics with
// the same value so that supervision still sees the failure (protoactor itself logs panics without a
// stack). Install it with actor.WithReceiverMiddleware(logging.PanicStack(log)).
func PanicStack(l hclog.Logger) actor.ReceiverMiddleware {
	return func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			defer func() {
				if r := recover(); r != nil {
					self := "<nil>"
					if pid := c.Self(); pid != nil {
						self = pid.Id
					}
					var msg any
					if env != nil {
						msg = env.Message
					}
					l.Error("actor panicked",
						"actor", self,
						"message_type", fmt.Sprintf("%T", msg),
						"panic", fmt.Sprint(r),
						"stack", string(debug.Stack()))
					panic(r)
				}
			}()
			next(c, env)
		}
	}
}
