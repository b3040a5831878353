// Package kubectl prints pods the way `kubectl get pods` does: NAME, READY, STATUS (kubectl 1.37's
// printPod reasoning: Init:N/M, CrashLoopBackOff, Completed, Error, NotReady, Terminating,
// SchedulingGated, ...; the app containers decide once the Initialized condition is True, a failed
// container's error beats NotReady beside a completed one, a deleted pod of a terminal phase keeps
// its status), RESTARTS (with "(12s ago)"; while initializing the init containers', after it the
// sidecars' and app containers') and AGE in kubectl's short human form, optionally with NAMESPACE
// (-A), NODE (a fleet aggregator's pods) and -o wide's IP, NODE, NOMINATED NODE and READINESS
// GATES; and nodes as `kubectl get nodes` does (NAME, STATUS, AGE; no ROLES or VERSION, which a
// fleet's nodes do not report), through kubectl's own tabwriter (PodTable, NodeTable: a watch's
// later rows keep the columns' widths); `kubectl top pod` and `kubectl top node`'s tables,
// byte for byte (PrintTopPods with --sum's rule and totals, PrintTopNodes with its percentages and
// <unknown> lines; tests/upstream compares them with kubectl's TopCmdPrinter); and it chooses the container `kubectl logs POD` reads
// (LogsContainer: -c, else the kubectl.kubernetes.io/default-container annotation, else the first
// container, with kubectl's notes) and the ones --all-containers reads (LogsContainers: init, app,
// then ephemeral containers; kubectl reads them in its map's random order); Select picks what
// `kubectl get KIND [NAME...] [-l SELECTOR] [--field-selector SELECTOR]` asks for (the field
// selectors as the API server parses and matches them: ParseFieldSelector, PodFields,
// NodeFields), and --show-labels adds kubectl's LABELS
// column (Columns.Labels); and it prints events as `kubectl events` does (SortEvents, EventCells,
// PrintEvents through kubectl's tabwriter, NewTabWriter, whose columns keep their widths for a
// watch); `kubectl wait`'s --for (ParseWaitFor) and its checks of a condition (ConditionMet)
// and of a field (JSONPathMet);
// kubectl's -o jsonpath= and -o custom-columns= (JSONPath, CustomColumns, on the objects' JSON
// form as kubectl get reads them, with k8s.io/client-go's jsonpath); and --sort-by (SortBy, Sort:
// kubectl's comparisons, but stable and with the objects that lack the field first, where
// kubectl's sort leaves them in no order). It is pure: the current time is a parameter.
//
// tests/upstream holds it to kubectl 1.37's own table printer (k8s.io/kubernetes
// pkg/printers/internalversion): TestGetPodsIsKubectls compares PodCells and PodWideCells with
// printPod's wide cells on 20,000 random pods, TestGetNodesStatusIsKubectls NodeStatus with
// printNode's STATUS, TestGetPodsTableIsKubectls the whole table with kubectl's table printer,
// byte for byte, TestHumanDurationIsKubectls HumanDuration with apimachinery's,
// TestLogsContainerIsKubectls LogsContainer with kubectl's polymorphichelpers.LogsForObjectFn,
// TestEventsIsKubectls the events table with kubectl events' own sort, printer and tabwriter,
// byte for byte, TestJSONPathAndCustomColumnsAreKubectls those outputs with cli-runtime's
// JSONPathPrinter and kubectl's CustomColumnsPrinter, byte for byte, TestSortByIsKubectls the
// order with kubectl's RuntimeSort,
// TestFieldSelectorsAreTheAPIServers the field selectors with the API server's
// parsing, field label conversion and pod and node registries. Beyond
// kubectl, a cluster member whose ClusterQuorum condition is False reads ",<reason>" after its
// STATUS.
package kubectl
