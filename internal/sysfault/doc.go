// Package sysfault puts a process or a socket in the states that are hard to reach on purpose, for
// tests that must meet real kernel errors rather than injected ones: a process that cannot open a
// single new descriptor (EMFILE), a loopback port whose connects hang, and one that refuses them
// and that no other process can take meanwhile. Linux semantics; on
// other systems each function returns an error saying it is unsupported.
package sysfault
