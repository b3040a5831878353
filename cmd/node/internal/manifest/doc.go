// Package manifest reads Pod manifests for node: YAML or JSON, several documents per file (or a
// v1.List), from files, directories (kubectl's -f DIR and -R), http(s) URLs or stdin, decoded
// strictly.
//
// Invariants: every error names its source ("pod.yaml: document 2: ...", counting the documents
// that hold more than comments, so a commented header before the first `---` is not one; documents
// are split as kubectl splits them, TestSplitDocumentsIsKubectls), a YAML syntax error its line in
// the file (the parser counts from the document's first line), and, when it concerns a field, the
// field path (`spec.containers[0].livenessProbe.periodSecond: unknown field`), with the list
// indices and map keys the decoder's own paths lack for a value of the wrong type
// (`spec.containers[2].args[1]: Invalid value: got number, want a string`; kubectl's API server
// names only `spec.containers.args`, and `livenessProbe.ProbeHandler.exec` where the manifest says
// `livenessProbe.exec`), and a hint to quote a number or YAML's y/n/on/off where text belongs;
// unknown and duplicate fields are errors, never silently dropped; only `kind: Pod` (directly or
// inside a List) is accepted. Decoding does no validation beyond the wire format: the caller validates
// (probes.ValidatePod and the process runtime's limits) and applies defaults. No more than
// MaxFileSize (64 MiB) is read of one file or of stdin: an endless input is an error naming it, not
// a process that fills its memory.
package manifest
