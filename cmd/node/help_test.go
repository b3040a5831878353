package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHelpNamesEveryFlagsArgument reads every command's -h as an operator does. flag.PrintDefaults
// takes a flag's argument name from the first `back-quoted` text in its usage, or "value" for a
// flag.Value, so a back-quoted phrase in the middle of a usage used to print as
// "-fleet node fleet --remote-listen". Each flag line must name one word of argument, never "value".
func TestHelpNamesEveryFlagsArgument(t *testing.T) {
	flagLine := regexp.MustCompile(`^  -([a-zA-Z-]+)(?: ([^\t]*))?(?:\t.*)?$`)
	for _, cmd := range []string{"run", "validate", "explain", "describe", "get", "logs", "events", "wait", "fleet", "top"} {
		t.Run(cmd, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := dispatch([]string{cmd, "-h"}, strings.NewReader(""), &stdout, &stderr)
			assert.Contains(t, []int{0, 2}, code)
			help := stdout.String() + stderr.String()
			require.Contains(t, help, "Flags:\n", "node %s -h prints no flags", cmd)
			flags := 0
			for _, line := range strings.Split(help, "\n") {
				m := flagLine.FindStringSubmatch(line)
				if m == nil {
					continue
				}
				flags++
				arg := m[2]
				assert.NotContains(t, arg, " ", "node %s -h: -%s's argument name is a phrase: %q", cmd, m[1], line)
				assert.NotEqual(t, "value", arg, "node %s -h: -%s's argument has no name: %q", cmd, m[1], line)
			}
			assert.Positive(t, flags, "node %s -h: no flag lines found", cmd)
		})
	}
}
