// Package kubeletconfig reads kubelet's configuration file for `node run --config FILE
// [--config-dir DIR]`: a KubeletConfiguration (kubelet.config.k8s.io/v1beta1, the type from
// k8s.io/kubelet), with kubelet 1.37.2's drop-in directory merged over it, so that a node can be
// pointed at the file a kubeadm-built machine already has (/var/lib/kubelet/config.yaml).
//
// Read is the whole package: files in, a Config out (the values of node's flags the files set,
// the fields node does not use, the warnings); it does no I/O beyond reading the files and holds
// no state. cmd/node applies the Config under the command line's flags.
//
// As kubelet 1.37.2 (cmd/kubelet/app/server.go, pkg/kubelet/kubeletconfig):
//   - the file must be non-empty YAML or JSON with apiVersion kubelet.config.k8s.io/v1beta1 and kind
//     KubeletConfiguration; a drop-in file too;
//   - the drop-in directory's files named *.conf, in its lexical walk order (subdirectories
//     included), are JSON merge patches (RFC 7386) over the file, the later ones winning; its other
//     files are skipped, and said so;
//   - decoding is strict first; when only unknown or duplicate fields fail it, the file is read
//     leniently and each such field is a warning (kubelet: "Using lenient decoding as strict
//     decoding failed"); a value of the wrong type is an error;
//   - a relative staticPodPath is resolved against the directory of the file that gives it;
//   - a zero duration (kubeadm writes "0s" for the fields it leaves to kubelet) is kubelet's default,
//     so it sets nothing;
//   - the command line wins over the files (cmd/node: a flag given is never overwritten), and
//     --feature-gates merges over featureGates gate by gate.
//
// Deliberate differences from kubelet:
//   - node uses only the fields that mean what one of its flags means (Fields lists them, with
//     the flag each sets); every other field the files set is reported by name (Config.Unused), in
//     one log line, instead of configuring a kubelet feature node does not have;
//   - address and readOnlyPort set --listen only when readOnlyPort is not 0: node always serves
//     its API (kubelet's read-only port), and a readOnlyPort of 0 (kubelet's default: none) leaves
//     --listen's default (loopback, where kubelet's address defaults to 0.0.0.0);
//   - a drop-in file's relative staticPodPath is resolved against the drop-in's directory (kubelet
//     leaves it relative to its working directory);
//   - errors name the file and the field (kubelet: the file and the decoder's text).
package kubeletconfig
