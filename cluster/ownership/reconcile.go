package ownership

import (
	"cmp"
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
	// Members is this member's view: the live members' addresses, itself included.
	Members []string
	// Reported holds, for each live peer, the view it last reported (its heartbeats carry it).
	Reported map[string][]string
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
	// Waiting holds the owned pods not started (UID → the live peer waited for: one that has not yet
	// reported a view containing this member). The handoff of a member's share back to it waits
	// until the previous owner has reported a view with the member, in which it no longer owns them.
	Waiting map[types.UID]string
}

// Reconcile decides which pods this member starts and stops. The rules:
//
//   - a pod runs on the live member that owns it by rendezvous hashing of its UID over the live
//     members (Owner), in each member's own view;
//   - the loser of a pod stops it (with its grace period) as soon as its view says it no longer
//     owns it, or when the pod leaves the pod set;
//   - the gainer starts it once its view says it owns it and every live peer (in its view) has
//     reported a view that contains the gainer: mutual visibility. Then no live peer can be running
//     it by its own view: a peer that has seen the gainer scores lower for this pod in any view
//     (rendezvous), so it does not own the pod whatever else its view holds. A pod whose owner died
//     starts at once on the survivor that gains it (the survivors have long seen each other); a
//     member that (re)joined starts nothing until every live peer has seen it, so a pod handed back
//     to it waits until its previous owner has seen the joiner and stopped the pod, and a pod that a
//     peer which has not seen the joiner yet takes over from a member that died meanwhile is not
//     started twice;
//   - a pod already running here keeps running while this member's view says it owns it, whatever
//     peers report (two members run a pod only while one of them misses a live member from its
//     view: a false suspicion or a partition; see the package doc).
//
// Nothing starts before the membership is Ready.
func Reconcile(in Input) Plan {
	plan := Plan{Waiting: map[types.UID]string{}}
	live := in.Ready && slices.Contains(in.Members, in.Self)
	for uid, grace := range in.Running {
		if _, ok := in.Desired[uid]; !ok {
			plan.Effects = append(plan.Effects, Effect{Action: Stop, UID: uid, Grace: grace, Reason: "removed from the pod set"})
			continue
		}
		if !live {
			plan.Effects = append(plan.Effects, Effect{Action: Stop, UID: uid, Grace: grace, Reason: "this member is not in its own view"})
			continue
		}
		if owner := Owner(string(uid), in.Members); owner != in.Self {
			plan.Effects = append(plan.Effects, Effect{Action: Stop, UID: uid, Grace: grace, Reason: "moved to " + owner})
		}
	}
	if live {
		peers := livePeers(in)
		unseen := notSeenBy(in.Self, peers, in.Reported)
		for uid := range in.Desired {
			if Owner(string(uid), in.Members) != in.Self {
				continue
			}
			plan.Owned++
			if _, ok := in.Running[uid]; ok {
				continue
			}
			if unseen != "" {
				plan.Waiting[uid] = unseen
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

// notSeenBy returns the first live peer whose reported view does not contain self, "" when every
// live peer has seen this member.
func notSeenBy(self string, peers []string, reported map[string][]string) string {
	for _, p := range peers {
		if !slices.Contains(reported[p], self) {
			return p
		}
	}
	return ""
}
