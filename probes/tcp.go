package probes

import (
	"context"
	"time"
)

// doTCP is kubelet's DoTCPProbe: connect within the timeout, send nothing, close. A failed connect is
// a Failure with the dial error as output — unless the prober itself could not connect (exhausted).
func (p *Prober) doTCP(ctx context.Context, addr string, timeout time.Duration) (Outcome, error) {
	conn, err := p.dialer.DialContext(ctx, "tcp", addr, timeout)
	if exhausted(err) {
		return exhaustedOutcome(err)
	}
	if err != nil {
		return Outcome{Result: Failure, Output: err.Error(), Reason: classifyNetError(err)}, nil
	}
	_ = conn.Close() // kubelet only logs a close error; the connect is what was probed
	return Outcome{Result: Success}, nil
}
