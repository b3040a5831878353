// Package features is kubelet's feature gates, for the gates that change what probeactor and node
// do, with kubelet 1.37.2's defaults (pkg/features/kube_features.go) and kubelet's --feature-gates
// syntax and error texts (k8s.io/component-base/featuregate).
//
// Gates is a plain value: its zero value is kubelet 1.37.2's defaults, Parse and Set read
// "Name=true,Other=false" as kubelet does (names are case-sensitive, values are anything
// strconv.ParseBool takes), and Enabled answers for one gate. What each gate changes:
//
//	ContainerRestartRules                  beta, on   container restartPolicy + restartPolicyRules (KEP-5307)
//	RestartAllContainersOnContainerExits   beta, on   rule action RestartAllContainers (KEP-5532)
//	H2CContainerProbe                      alpha, off httpGet.protocol: HTTP2 probes in h2c
//	GRPCContainerProbeTLS                  alpha, off grpc.mode: TLS probes over TLS, unverified
//	KubeletCrashLoopBackOffMax             beta, on   a configurable CrashLoopBackOff maximum
//	ReduceDefaultCrashLoopBackOffDecay     alpha, off CrashLoopBackOff 1 s doubling to 60 s
//	ChangeContainerStatusOnKubeletRestart  deprecated, off: only off is implemented (Set refuses on)
//	ExecProbeTimeout, NodeDeclaredFeatures GA, locked on
//
// A gate kubelet knows but probeactor does not act on is "unrecognized" here, as an unknown gate is
// to kubelet: accepting it would promise a behaviour nothing implements. For the same reason
// AllAlpha and AllBeta are refused (kubelet 1.37.2 refuses AllAlpha=true alone too, for gates
// outside this list).
//
// Invariants: a Gates value is never mutated once another holder may see it (Set copies before it
// writes), so copies can be shared between goroutines; Parse and Set check kubelet's dependencies
// (RestartAllContainersOnContainerExits needs ContainerRestartRules) on the merged result; the
// package is pure (no I/O, no globals that change).
package features
