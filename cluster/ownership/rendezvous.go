package ownership

// FNV-1a 64-bit parameters (hash/fnv's New64a), inlined so scoring allocates nothing.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// Score is a member's rendezvous weight for a key: FNV-1a 64 over the key's bytes, a zero byte and
// the member's address bytes, then murmur3's 64-bit finalizer (fmix64).
//
// protoactor's cluster.Rendezvous scores with plain FNV-1a 32 over key then address. Its last
// multiply barely separates addresses that differ in their last character, so members on adjacent
// ports do not get equal shares: of 3,000 keys over 127.0.0.1:7101–7103 it gives 7101 about half
// (1,490 / 756 / 754; TestProtoactorsScoreIsSkewedForAdjacentPorts). The finalizer mixes every
// input bit into every output bit, which restores equal shares; the rest of the algorithm is
// protoactor's.
func Score(key, member string) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= fnvPrime64
	}
	h *= fnvPrime64 // the zero separator byte: "ab"+"c" and "a"+"bc" differ
	for i := 0; i < len(member); i++ {
		h ^= uint64(member[i])
		h *= fnvPrime64
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// Owner returns the member of members (addresses, host:port) that owns key: rendezvous (highest
// random weight) hashing as protoactor's cluster.Rendezvous.GetByClusterIdentity does it — every
// member scores the key, the highest score wins — with Score's better-mixed weight. A tie (equal
// 64-bit scores) goes to the lowest address, so every member computes the same owner from the same
// set whatever the order (protoactor breaks ties by its member IDs, which are per-process here).
// "" when members is empty.
//
// The property failover relies on: removing a member moves only the keys it owned (each to the
// member with the next-highest score), and adding one moves to it only the keys it now owns.
func Owner(key string, members []string) string { return ownerBy(key, members, Score) }

func ownerBy(key string, members []string, score func(key, member string) uint64) string {
	best, bestScore := "", uint64(0)
	for _, m := range members {
		s := score(key, m)
		if best == "" || s > bestScore || (s == bestScore && m < best) {
			best, bestScore = m, s
		}
	}
	return best
}
