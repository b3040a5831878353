package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ContentUID gives a pod read from -f without metadata.uid a UID derived from its namespace, name
// and content (the manifest as read, before defaults), as static pods' UIDs derive from theirs: the
// same manifest is the same pod to every node that reads it, so a node started again on the same
// --root-dir finds the pods it ran (and adopts their containers), and a changed manifest is a new
// pod (its old instance is replaced). A pod that names its UID keeps it.
func ContentUID(pod *v1.Pod) {
	if pod.UID != "" {
		return
	}
	ns := pod.Namespace
	if ns == "" {
		ns = "default"
	}
	content := *pod // the namespace as it will be, spelled out or not
	content.Namespace = ns
	raw, err := json.Marshal(&content)
	if err != nil { // a decoded v1.Pod always marshals; keep Prepare's random UID otherwise
		return
	}
	h := sha256.New()
	h.Write([]byte("probeactor-pod\x00" + ns + "\x00" + pod.Name + "\x00"))
	h.Write(raw)
	pod.UID = types.UID(hex.EncodeToString(h.Sum(nil))[:32])
}
