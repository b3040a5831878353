// Package probehygiene holds the connection-hygiene test of the probes package: HTTP probes at
// ≥1,000 per second for 10 s against a local server must all succeed, and the sockets they use
// (open and TIME_WAIT, read from /proc/net/tcp and /proc/net/tcp6) must stay bounded by the number
// of probes in flight rather than grow with the number of probes made. Linux only.
package probehygiene
