// Package logging bridges the actor runtime's logging into the project's hclog logger.
//
// It owns three things:
//   - NewSlogHandler / SystemOption: protoactor logs through log/slog; this handler sends those records
//     to an hclog.Logger (levels mapped, attributes as key/value pairs, groups as dotted key prefixes),
//     so one logger — named subsystems, identity bound once — carries everything a node prints.
//   - PanicStack: receiver middleware that logs a panic with its stack and the message type, then
//     re-panics so supervision handles the failure exactly as without it.
//   - logtest (subpackage): a per-test logger that shows its output only when the test fails.
//
// Invariants: the handler never drops a record hclog's level would accept and never blocks beyond
// hclog's own write; PanicStack never swallows a panic. Nothing here starts a goroutine.
package logging
