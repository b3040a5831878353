package runner

import (
	"crypto/sha256"
	"encoding/hex"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ClusterUID returns what gives a pod without metadata.uid a UID every member of the cluster
// named cluster derives alike (from the cluster name, the pod's namespace, "default" when empty,
// and its name): the sharder places pods by UID, and a random UID per process would make one pod
// several. A pod that has a UID keeps it.
func ClusterUID(cluster string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.UID != "" {
			return
		}
		ns := p.Namespace
		if ns == "" {
			ns = "default"
		}
		h := sha256.Sum256([]byte("probeactor-cluster\x00" + cluster + "\x00" + ns + "\x00" + p.Name))
		p.UID = types.UID(hex.EncodeToString(h[:16]))
	}
}
