package ownership

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Input is what one reconciliation of one member looks at. Reconcile never modifies it.
type Input struct {
	// Self is this member's address.
	Self string
	// Ready is false until the membership has completed its first round (every peer heard from or
	// the failure timeout passed): until then nothing is started, since a member that has not
	// heard its peers would own every pod.
	Ready bool
	// Now is when the reconciliation runs (the member's own clock): leases and bounds are
	// compared with it, so a view that aged (a member frozen between the view and its
	// reconciliation) is judged by what is true now.
	Now time.Time
	// All lists every configured member (--cluster-peers), self included: quorums are of these.
	All []string
	// Members is this member's view: the live members' addresses, itself included.
	Members []string
	// Reported holds, for each live peer, the view it last reported (its heartbeats carry it).
	Reported map[string][]string
	// Current holds, for each live peer, until when its last report is current: it was sent after
	// the peer heard a heartbeat this member sent within the failure timeout (cluster/membership).
	// A report that is not current (a member resumed after a freeze reading heartbeats buffered
	// meanwhile) is not acted on.
	Current map[string]time.Time
	// Stopping holds, for each live peer, the pods its last report said it still stops.
	Stopping map[string][]types.UID
	// LeaseUntil is until when this member holds its quorum lease: a quorum of the configured
	// members (itself included) has granted it one (zero: none). Past it the member runs nothing.
	LeaseUntil time.Time
	// Gone holds, for each configured member outside Members, since when a quorum of current
	// reports (this member's view included) has left it out: from then on that member can hold
	// no quorum lease, so it began to stop its pods by then at the latest. A member outside
	// Members and not in Gone is not known to be fenced.
	Gone map[string]time.Time
	// Left holds the members whose last incarnation announced its leave: a member stops its pods
	// before it announces it, so they are waited for no longer.
	Left map[string]bool
	// Margin is added to every bound to cover clock-rate differences between members and the
	// scheduling delay of a stop (see cluster/membership's doc for its derivation).
	Margin time.Duration
	// Desired is the pod set every member reads (UID → termination grace period).
	Desired map[types.UID]time.Duration
	// Running is what this member started and has not stopped since (UID → grace period).
	Running map[types.UID]time.Duration
}

// Action is what an Effect does to a pod.
type Action uint8

const (
	// Start runs the pod on this member.
	Start Action = iota + 1
	// Stop stops the pod here, with its grace period.
	Stop
)

func (a Action) String() string {
	switch a {
	case Start:
		return "start"
	case Stop:
		return "stop"
	default:
		return "unknown"
	}
}

// Effect is one pod to start or stop.
type Effect struct {
	Action Action
	UID    types.UID
	// Grace is the pod's termination grace period (Stop).
	Grace time.Duration
	// Reason says why (Stop: "removed from the pod set", "moved to <address>"; Start: "owned").
	Reason string
}

// Plan is the outcome of one reconciliation.
type Plan struct {
	// Effects: every Stop, then every Start, each in UID order.
	Effects []Effect
	// Owned counts the desired pods this member owns in its view (running or waiting).
	Owned int
	// Waiting holds the owned pods not started, each with what it waits for.
	Waiting map[types.UID]string
	// Quorate is whether this member held its quorum lease at Now; Reason says why not.
	Quorate bool
	Reason  string
	// Next is the earliest later time at which this plan may change with no new input (the lease
	// runs out, a lost member's bound passes); zero: none.
	Next time.Time
}

// Reconcile decides which pods this member starts and stops. The rules:
//
//   - a pod's owner is the live member that scores highest for its UID among the live members
//     (Owner), in each member's own view;
//   - a member runs pods only while it holds its quorum lease: a member that lost it stops every
//     pod (with its grace period) and starts none;
//   - the loser of a pod stops it as soon as its view says it no longer owns it, or when the pod
//     leaves the pod set;
//   - the gainer starts it only when (1) its view is agreed: every live peer has a current report
//     of exactly this view (so no peer runs the pod by its own view: it is owned by the gainer in
//     it), (2) no live peer reports it still stops the pod (a hand-back waits for the old
//     container's exit), and (3) every configured member outside the view has been left out by a
//     quorum for at least the pod's grace period plus the margin: such a member can renew no quorum
//     lease, so it (or its shims, whose lease is the member's) began the pod's stop by then, and
//     finished it a grace period later;
//   - a pod already running here keeps running while this member holds its lease and its view
//     says it owns it.
//
// Nothing starts before the membership is Ready.
func Reconcile(in Input) Plan {
	plan := Plan{Waiting: map[types.UID]string{}}
	inView := in.Ready && slices.Contains(in.Members, in.Self)
	plan.Quorate, plan.Reason = quorum(in, inView)
	if plan.Quorate {
		plan.Next = in.LeaseUntil
	}
	for uid, grace := range in.Running {
		if _, ok := in.Desired[uid]; !ok {
			plan.Effects = append(plan.Effects, Effect{Action: Stop, UID: uid, Grace: grace, Reason: "removed from the pod set"})
			continue
		}
		if !plan.Quorate {
			plan.Effects = append(plan.Effects, Effect{Action: Stop, UID: uid, Grace: grace, Reason: plan.Reason})
			continue
		}
		if owner := Owner(string(uid), in.Members); owner != in.Self {
			plan.Effects = append(plan.Effects, Effect{Action: Stop, UID: uid, Grace: grace, Reason: "moved to " + owner})
		}
	}
	if plan.Quorate {
		agreed := disagreement(in)
		stopping := map[types.UID]string{}
		for _, p := range livePeers(in) {
			for _, uid := range in.Stopping[p] {
				stopping[uid] = p
			}
		}
		for uid, grace := range in.Desired {
			if Owner(string(uid), in.Members) != in.Self {
				continue
			}
			plan.Owned++
			if _, ok := in.Running[uid]; ok {
				continue
			}
			if agreed != "" {
				plan.Waiting[uid] = agreed
				continue
			}
			if p, ok := stopping[uid]; ok {
				plan.Waiting[uid] = p + " still stops it"
				continue
			}
			if why, at := fenced(in, grace); why != "" {
				plan.Waiting[uid] = why
				if !at.IsZero() && (plan.Next.IsZero() || at.Before(plan.Next)) {
					plan.Next = at
				}
				continue
			}
			plan.Effects = append(plan.Effects, Effect{Action: Start, UID: uid, Reason: "owned"})
		}
	}
	slices.SortFunc(plan.Effects, func(a, b Effect) int {
		return cmp.Or(cmp.Compare(b.Action, a.Action), cmp.Compare(a.UID, b.UID))
	})
	return plan
}

// quorum says whether this member holds its quorum lease at in.Now, and if not why.
func quorum(in Input, inView bool) (bool, string) {
	switch {
	case !inView:
		return false, "this member is not in its own view yet"
	case in.LeaseUntil.IsZero() || !in.Now.Before(in.LeaseUntil):
		seen := []string{in.Self}
		for _, p := range livePeers(in) {
			if in.Now.Before(in.Current[p]) {
				seen = append(seen, p)
			}
		}
		return false, fmt.Sprintf("QuorumLost: this member is in contact with %d of the %d cluster members (a quorum needs %d)",
			len(seen), len(in.All), QuorumSize(len(in.All)))
	default:
		return true, ""
	}
}

// disagreement names the first live peer whose report is not current or not this member's view,
// "" when every live peer currently reports exactly this view.
func disagreement(in Input) string {
	for _, p := range livePeers(in) {
		if !in.Now.Before(in.Current[p]) {
			return "waiting for a current report from " + p
		}
		if !slices.Equal(in.Reported[p], in.Members) {
			return p + " reports another view"
		}
	}
	return ""
}

// fenced says what a pod with this grace period still waits for among the configured members
// outside the view ("" when none), and when that wait ends (zero: not known yet).
func fenced(in Input, grace time.Duration) (string, time.Time) {
	why, until := "", time.Time{}
	for _, m := range in.All {
		if slices.Contains(in.Members, m) || in.Left[m] {
			continue
		}
		since, ok := in.Gone[m]
		if !ok {
			return m + " is not yet left out by a quorum", time.Time{}
		}
		if end := since.Add(grace + in.Margin); in.Now.Before(end) && end.After(until) {
			why, until = fmt.Sprintf("%s may still run it until %s", m, end.Format(time.RFC3339Nano)), end
		}
	}
	return why, until
}

// livePeers are the members of this member's view other than itself, in order.
func livePeers(in Input) []string {
	peers := make([]string, 0, len(in.Members))
	for _, m := range in.Members {
		if m != in.Self {
			peers = append(peers, m)
		}
	}
	slices.Sort(peers)
	return peers
}

// Margin is the margin of the bound a lost member's pods wait for (Input.Margin), for a cluster
// whose failure timeout is timeout (a heartbeat every timeout/8), given the longest grace period
// waited for: a tenth of both (a clock that runs up to 10 % slower than its peers' still ends its
// lease and its grace period within it), one heartbeat interval (a member notices its lease ran
// out at its next event at the latest, its shims exactly) and 500 ms for the stop's own scheduling
// (a SIGKILL delivered, the exit reaped).
func Margin(timeout, grace time.Duration) time.Duration {
	return (timeout+grace)/10 + timeout/8 + 500*time.Millisecond
}
