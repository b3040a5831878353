package actors_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README's embedding program is Example, word for word: its main's body is Example's body
// (without the expected output), its imports are Example's.
func TestReadmeShowsExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	example, err := os.ReadFile("example_embed_test.go")
	require.NoError(t, err)
	r, e := string(readme), string(example)

	start := strings.Index(r, "```go\npackage main\n")
	require.NotEqual(t, -1, start, "README.md has no embedding program (a ```go block starting with package main)")
	prog := r[start+len("```go\n"):]
	prog = prog[:strings.Index(prog, "```")]

	require.Equal(t, section(t, e, "import (", ")\n"), section(t, prog, "import (", ")\n"), "imports")
	body := strings.TrimSpace(section(t, e, "func Example() {", "\t// Output:"))
	require.Equal(t, body, strings.TrimSpace(section(t, prog, "func main() {", "\n}\n")), "README.md's main must be Example's body")
}

// section returns s from the first from up to (not including) the first to after it.
func section(t *testing.T, s, from, to string) string {
	t.Helper()
	i := strings.Index(s, from)
	require.NotEqual(t, -1, i, "no %q", from)
	s = s[i+len(from):]
	j := strings.Index(s, to)
	require.NotEqual(t, -1, j, "no %q after %q", to, from)
	return s[:j]
}
