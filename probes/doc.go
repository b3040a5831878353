// Package probes makes single probe attempts with kubelet 1.37.2's exact semantics (pkg/probe/{http,
// tcp,exec,grpc} and pkg/kubelet/prober's runProbe), hardened against hostile targets. It owns no
// goroutines beyond one attempt, no actors and no logger: the actor core calls Prober.Probe once per
// attempt and owns retries (kubelet's 3 tries on error), thresholds and events.
//
// # What an attempt reports
//
// Probe returns an Outcome: kubelet's Result (Success, Warning, Failure, Unknown) and output text,
// plus a machine-readable Reason and the attempt's Duration. Its error is non-nil when kubelet's
// probe returns an error — the worker retries the attempt (3 tries) and then discards the result,
// so the previous result stands: no handler (ErrNoHandler); an unresolvable named port or a port
// out of range (ErrInvalidPort); an HTTP request that cannot be built; an HTTP body that broke off
// (BodyError, below); a CommandRunner that could not run the command; the prober's own resources
// running out (ErrExhausted, below); and the caller's context ending first (ReasonCanceled). An
// unhealthy target is otherwise a Failure with a nil error.
//
// # The prober's own exhaustion is not the target's fault
//
// A connect (HTTP, HTTPS, TCP, gRPC) or an exec command's start that the kernel refuses the prober
// itself — EMFILE, ENFILE (no descriptor), ENOBUFS, ENOMEM (no kernel memory), EADDRNOTAVAIL (no
// ephemeral port), EAGAIN (fork, routing) — is a probe error wrapping ErrExhausted and the errno,
// Result Unknown, ReasonExhausted: retried, then discarded, so a node out of descriptors restarts
// no container and flips no condition (kubelet has the flaw: it fails every probe, and restarts
// every probed container). gRPC, which would retry such a connect until its deadline, ends at once.
// What the target does — refuse, reset, time out, answer badly — stays a Failure. An exec command
// that does start but then fails inside for want of descriptors is its own verdict: nothing tells
// the two apart.
//
// # Broken-off bodies (one rule)
//
// Once an HTTP response's status line and headers have arrived, an error reading its body — fewer
// bytes than its Content-Length, a chunked body cut before its last chunk, a reset, or the attempt
// timeout passing while the body is read — is a probe error, as kubelet's DoHTTPProbe makes it
// ((Failure, "", err)): Probe returns Result Failure, no output and a *BodyError whose text is the
// transport's alone ("unexpected EOF"), so the worker's event reads kubelet's "Liveness probe
// errored and resulted in failure state: unexpected EOF". Only the first 10 KiB are read, so a body
// that breaks off after them is a Success, as in kubelet. The consequence is kubelet's too: a
// target that always sends its headers and then stalls is never failed by its liveness probe.
//
// # Handlers (kubelet's precedence: exec, httpGet, tcpSocket, grpc)
//
//   - HTTP: URL from scheme/host (default pod IP)/port (named ports from the container: a name no
//     port has is an error, `port "http" not found`, as in kubelet 1.37; up to 1.36 kubelet parsed it
//     as a number)/path (query kept), IPv6 bracketed, then re-parsed from its string form as
//     kubelet does (so a path without a leading slash, "healthz", requests "/healthz"). Header names canonicalized and repeated
//     values kept; "User-Agent: kube-probe/1.37" and "Accept: */*" unless set, an empty value removes
//     them; a Host header overrides the request host (kept across same-host relative redirects).
//     200–299 Success (body as output), 300–399 not followed Warning ("Probe terminated redirects,
//     Response body: …"), otherwise Failure ("HTTP probe failed with statuscode: N", body left out).
//     Same-hostname redirects are followed (at most 10 requests); another hostname yields the 3xx as
//     a Warning. TLS is not verified; proxy variables are ignored; no keep-alives, no compression.
//     HTTPS offers h2 and http/1.1 by ALPN (golang.org/x/net/http2, as apimachinery's
//     SetTransportDefaults); setting DISABLE_HTTP2 to any non-empty value before New keeps HTTPS on
//     HTTP/1.1, kubelet's opt-out. Plain HTTP speaks h2c only with protocol HTTP2 and the
//     H2CContainerProbe gate on (WithFeatureGates; alpha, off by default): HTTP/2 with prior
//     knowledge through net/http's own HTTP/2 and nothing else, as kubelet's ProbeH2C (a redirect
//     to HTTPS then fails, as there). The attempt timeout covers connect,
//     TLS, headers, redirects and body. At most 10 KiB of body is read; response headers are capped
//     at 64 KiB for HTTP/1.1 and HTTP/2 alike (Go's default is 10 MiB).
//   - TCP: connect within the timeout, send nothing, close.
//   - Exec: $(VAR) expanded from the container's env (ExpandCommand, kubelet's
//     ExpandContainerCommandOnlyStatic), run by the CommandRunner with the timeout as ctx deadline;
//     stdout then stderr, 10 KiB kept. Exit 0 Success, non-zero Failure, timeout Failure with the
//     runner's error text as output (kubelet with ExecProbeTimeout on).
//   - gRPC: grpc.health.v1.Health/Check{service}, insecure (with mode TLS and the
//     GRPCContainerProbeTLS gate on, WithFeatureGates: TLS without verifying the certificate, as
//     kubelet 1.37), user agent kube-probe/1.37, one deadline
//     over connect and RPC, kubelet's output strings ("service healthy", "service unhealthy
//     (responded with \"NOT_SERVING\")", "timeout: failed to connect service \"addr\" within 1s: …",
//     "timeout: health rpc did not complete within 1s", "error: …"). A fresh connection per attempt,
//     as kubelet's, with 4 KiB read and write buffers (gRPC's default 32 KiB each were most of an
//     attempt's allocations; a health exchange fits in one read and one write) and responses
//     capped at 64 KiB.
//
// # Deliberate differences from kubelet
//
// Each carries the name under which the differential suite (tests/upstream, below) expects it; the
// suite checks that this list and its own are the same.
//
//   - (suite: abortive-close) Socket hygiene: sockets get kubelet's SO_LINGER 1 s, but that alone
//     still leaves one 60 s TIME_WAIT per probe on Linux (measured). By default a probe connection
//     is therefore closed abortively (RST) once the attempt has its answer, which leaves no
//     TIME_WAIT on either side; the target sees "connection reset" instead of EOF.
//     WithGracefulClose restores kubelet's FIN close.
//   - (suite: header-cap) Response headers over 64 KiB fail the probe (ReasonProtocol; over HTTP/2
//     the connection ends with COMPRESSION_ERROR) instead of being read up to 10 MiB.
//   - (suite: http-transport) Each HTTP attempt has its own transport, closed with it; kubelet
//     shares one for all probes. Closing it cancels a dial the attempt stopped waiting for, where
//     kubelet's lets it run on (net/http detaches dials from the request): against a black-holed
//     target each timed-out probe leaves a connect pending until the kernel gives up (~2 min on
//     Linux). And with HTTP/2 and single-use connections, x/net's shared per-host pool makes
//     concurrent HTTPS probes of one target take each other's fresh connections and redial
//     (measured: 48 concurrent probers of one target, 94 of 600 probes timed out waiting for a
//     connection). A private transport costs ~1 KB and 4 allocations for an http:// attempt, and
//     ~2 KB and 15 for an https:// one: only an https request builds kubelet's HTTP/2 set-up
//     (transports; HTTP/2 is negotiated in TLS only, so an http:// request never uses it).
//   - (suite: own-exhaustion) A connect or exec start the kernel refuses the prober itself is a probe
//     error (ErrExhausted, above); kubelet makes it a Failure, so a kubelet out of descriptors
//     restarts every container whose liveness probe it cannot make.
//   - (suite: exec-process-group) RunLocal (the built-in runner) kills the command's whole process
//     group on timeout and also after the command exits, so nothing it started outlives the
//     attempt. On Linux the command also dies if the prober's process does (Pdeathsig SIGKILL, the
//     starting goroutine locked to its thread until the command is reaped); LocalOptions.Guard lets
//     a helper process take the command's whole group down in that case.
//   - (suite: exec-start-failure) With RunLocal a program that cannot be found or executed exits
//     127/126, a Failure with the error as output, as a shell in a container reports it. kubelet
//     through containerd gets an ExecSync error instead: a probe error, retried and discarded, so
//     there a liveness probe naming a missing binary never fails.
//   - (suite: no-handler-text) A probe without a handler errors naming the container only
//     (ErrNoHandler): the Prober is not told the pod; kubelet names pod and container.
//
// # Upstream quirks, decided
//
//   - (suite: stalled-body-errors) Kept: a body that stalls past the timeout is a probe error, as
//     in kubelet (see Broken-off bodies), so such a target never fails its liveness probe.
//   - (suite: h2c-error-race) Kept: an h2c probe of a target that does not speak HTTP/2 fails with one
//     of two texts ("http2: frame too large, note that the frame header looked like an HTTP/1.1
//     header" or "http2: client conn could not be established"), whichever of net/http's HTTP/2
//     reader and round trip notices first; kubelet's does the same. Both are a Failure.
//   - (suite: utilexec-big-output) Not followed: upstream's exec prober fails its own output write
//     past 10 KiB; driven through k8s.io/utils/exec that turns a big output into a probe error or a
//     SIGPIPE Failure. kubelet's own adapter (execInContainer) ignores that write error and so does
//     this package: the first 10 KiB and the command's verdict.
//
// # Agreement with upstream: the differential suite
//
// tests/upstream is a nested module (its own go.mod: this module never depends on
// k8s.io/kubernetes) that runs the same v1.Probe against the same live loopback target through
// upstream's pkg/probe/{http,tcp,grpc,exec} — driven as kubelet's pkg/kubelet/prober/prober.go
// drives them, 3 tries on error included — and through Prober, and compares result, output and
// error text case by case (HTTP, HTTPS/HTTP/2, h2c, TCP, gRPC, gRPC over TLS, exec), each case
// under its feature gates on both sides. It pins k8s.io/kubernetes v1.37.2 and its staging modules
// at v0.37.2 (the k8s.io/api version of this module). To move it:
// in tests/upstream, `go get k8s.io/kubernetes@v1.N.M`, set every k8s.io/* replace line in its
// go.mod to v0.N.M, `go mod tidy`, update UPSTREAM_LDFLAGS in the Makefile (kubelet's version,
// which upstream's User-Agent reads) and UserAgent here, then run `make test` and turn every new
// disagreement into a fix or a named difference above.
//
// # Invariants
//
//   - A Prober is safe for concurrent use; no HTTP connection outlives its attempt (each attempt's
//     transport is closed with it, which also cancels a dial nobody waits for).
//   - No attempt outlives its timeout by more than teardown (RunLocal waits at most 100 ms for output
//     pipes after killing); no attempt holds more than 10 KiB of a target's output (per exec stream)
//     or 64 KiB of response header in memory.
//   - The package imports neither protoactor nor hclog.
//
// # Validation and defaults
//
// ValidatePod applies the API server's probe rules with field paths; SetDefaults/SetProbeDefaults
// apply the API defaults (period 10 s, timeout 1 s, thresholds 1/3, path "/", scheme HTTP, plus the
// pod's restartPolicy Always and terminationGracePeriodSeconds 30).
//
// # Cost of one attempt
//
// go test -run '^$' -bench . -benchmem ./probes on a shared 2-core Intel Xeon VM (Go 1.26, no -race;
// the figures include the in-process target's side, e.g. the HTTP server's allocations):
//
//	BenchmarkHTTPProbe-2   ~100–140 µs/op   ~21.0 KB/op   166 allocs/op
//	BenchmarkTCPProbe-2    ~37–43 µs/op      ~2.1 KB/op    44 allocs/op
//	BenchmarkExecProbe-2   ~1.1–1.6 ms/op   ~12.9 KB/op   120 allocs/op  (fork+exec of `true`)
//
// (The exec figure was ~77 KB/op before limitWriter implemented io.ReaderFrom: os/exec's two 32 KiB
// copy buffers per attempt are gone. The HTTP figure was ~19.0 KB/op and 148 allocs/op with one
// shared transport; a transport per attempt measured side by side in one run, 3 counts each: 1.11x
// bytes, 1.12x allocations, time 1.07x — within that loaded run's spread.) Ranges are over 3 runs on
// a machine shared with other work.
//
// tests/probehygiene offers 1,200 HTTP probes/s for 10 s to a local server, asserts zero failures and
// checks that sockets do not pile up (the achieved rate is logged: ~1,200/s here).
package probes
