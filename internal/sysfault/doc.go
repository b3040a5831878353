// Package sysfault puts a process or a socket in the states that are hard to reach on purpose, for
// tests that must meet real kernel errors rather than injected ones: a process that cannot open a
// single new descriptor (EMFILE), and a loopback port whose connects hang. Linux semantics; on
// other systems each function returns an error saying it is unsupported.
package sysfault
