package ownership

import "slices"

// Quorate says whether the members in seen form a quorum of the configured members all: a
// strict majority, or exactly half of an even-sized cluster when that half holds the lowest
// configured address (the tie-break: of two halves, exactly one holds it). Any two quorums share
// a member, which is what the membership's leases and Reconcile's rules rely on. A cluster of
// two members is refused by the membership (one member alone would be a quorum only on one
// side: failover in one direction), so the tie-break matters from four members on.
func Quorate(seen, all []string) bool {
	n := 0
	for _, m := range all {
		if slices.Contains(seen, m) {
			n++
		}
	}
	switch {
	case len(all) == 0:
		return false
	case 2*n > len(all):
		return true
	case 2*n == len(all):
		return slices.Contains(seen, slices.Min(all))
	default:
		return false
	}
}

// QuorumSize is how many members of all a quorum needs at the least (the tie-break aside).
func QuorumSize(all int) int { return all/2 + 1 }
