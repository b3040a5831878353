// Package probehygiene holds the connection-hygiene test of the probes package: 12,000 HTTP probes
// offered at 1,200 per second for 10 s against a local server must all succeed, and the sockets they
// use (open and TIME_WAIT, read from /proc/net/tcp and /proc/net/tcp6) must stay bounded by the number
// of probes in flight rather than grow with the number of probes made. The achieved rate is logged
// (typically 1,200/s here); it is not asserted, because a timing assertion would flake on a loaded
// machine while telling nothing about socket hygiene. Linux only.
package probehygiene
