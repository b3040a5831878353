// Package upstream is the differential suite of package probes: every case runs the same v1.Probe
// against the same live loopback target through upstream Kubernetes' own probe code
// (k8s.io/kubernetes pkg/probe/{http,tcp,grpc,exec}, the version pinned in go.mod, driven by Kubelet
// the way pkg/kubelet/prober/prober.go drives it) and through probes.Prober, and compares the
// result, the output and the error text, each after kubelet's 3 tries on error.
//
// It is a nested module so that the project's root module, and whoever embeds it, never depends on
// k8s.io/kubernetes; go.mod replaces every k8s.io staging module k8s.io/kubernetes requires at
// v0.0.0 with its published v0.<minor>.<patch>.
//
// A case may name kubelet feature gates (--feature-gates syntax): both sides then run under them —
// kubelet's side reads its own copy of kubelet's gate registry where prober.go reads
// utilfeature.DefaultFeatureGate, probeactor's gets probes.WithFeatureGates — so h2c
// (H2CContainerProbe) and gRPC over TLS (GRPCContainerProbeTLS) are compared against real h2c and
// TLS gRPC targets with the gates on and off. Two tests compare decisions rather than attempts:
// TestFeatureGatesAreKubelets (package features against kubelet's registry: defaults, stages,
// locks, and --feature-gates values accepted or refused with the same text) and
// TestRestartRulesAreKubelets (internal/restartpolicy against upstream's ContainerShouldRestart,
// FindMatchingContainerRestartRule, ShouldAllContainersRestart and AllContainersCouldRestart: what
// decides node's restarts and a probe worker's keep-going after its container terminated).
// TestValidationIsTheAPIServers compares internal/podspec (SetDefaults, then Validate) with the API
// server's v1 defaults and ValidatePodCreate on random pods: on the fields podspec owns, the same
// errors in the same words; TestDefaultsAreTheAPIServers compares the defaults it fills in.
// TestGetPodsIsKubectls, TestGetPodsTableIsKubectls, TestGetNodesStatusIsKubectls, TestHumanDurationIsKubectls and
// TestDescribeIsKubectls hold what node prints for operators (internal/kubectl, internal/describe)
// to kubectl 1.37's own printers (k8s.io/kubernetes pkg/printers/internalversion, k8s.io/kubectl
// pkg/describe over a fake clientset) on random pods and nodes; TestLogsContainerIsKubectls holds
// `node logs`'s choice of container and its notes to kubectl's polymorphichelpers.LogsForObjectFn;
// TestEventsIsKubectls holds `node events`' table to kubectl events' own, byte for byte;
// TestJSONPathAndCustomColumnsAreKubectls `node get -o jsonpath=` and `-o custom-columns=` to
// kubectl's printers; TestSortByIsKubectls `--sort-by` to kubectl's sorter;
// TestFieldSelectorsAreTheAPIServers `node get --field-selector` to the API server's parsing,
// field label conversion and pod and node registries' selectable fields. TestConditionsAreKubelets holds
// internal/podstatus's ContainersReady, Ready and Initialized to kubelet's own generators
// (pkg/kubelet/status).
//
// What the comparison treats as equal: result, error text and number of tries exactly; output
// exactly, after masking the probe's own ephemeral port in transport errors ("127.0.0.1:<ephemeral>->").
// A case that is expected to differ names its difference; the names are those in probes/doc.go
// (TestDocListsEveryID keeps the two lists equal), and every case also checks its expected result so
// that two implementations failing the same way for a broken setup cannot pass.
//
// Exec probes need a container runtime, which is not part of upstream's probe code: RunInContainerCRI
// is the stand-in on kubelet's side (a local process, results shaped as k8s.io/cri-client's ExecSync
// shapes them); probeactor's side uses its own built-in runner, probes.RunLocal.
//
// Run it with `make test` from the repository root: the binary needs kubelet's version stamped with
// -ldflags (UPSTREAM_LDFLAGS), as kubelet's build does, because upstream's User-Agent reads it.
package upstream
