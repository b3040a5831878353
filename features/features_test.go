package features

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultsAreKubelet1372(t *testing.T) {
	var g Gates
	want := map[Feature]bool{
		ContainerRestartRules:                 true,
		RestartAllContainersOnContainerExits:  true,
		H2CContainerProbe:                     false,
		GRPCContainerProbeTLS:                 false,
		KubeletCrashLoopBackOffMax:            true,
		ReduceDefaultCrashLoopBackOffDecay:    false,
		ChangeContainerStatusOnKubeletRestart: false,
		ExecProbeTimeout:                      true,
		NodeDeclaredFeatures:                  true,
		PodObservedGenerationTracking:         true,
	}
	for f, v := range want {
		assert.Equal(t, v, g.Enabled(f), "%s", f)
	}
	assert.Len(t, known, len(want), "every known gate has its default checked here")
	assert.False(t, g.Enabled("NoSuchGate"))
	assert.Equal(t, "", g.String())
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		on   []Feature
		off  []Feature
		str  string
		fail string
	}{
		{in: "", on: []Feature{ContainerRestartRules}, off: []Feature{H2CContainerProbe}},
		{in: "H2CContainerProbe=true", on: []Feature{H2CContainerProbe, ContainerRestartRules}, str: "H2CContainerProbe=true"},
		{in: " H2CContainerProbe = 1 ,, GRPCContainerProbeTLS=T", on: []Feature{H2CContainerProbe, GRPCContainerProbeTLS},
			str: "H2CContainerProbe=true,GRPCContainerProbeTLS=true"},
		{in: "RestartAllContainersOnContainerExits=false,ContainerRestartRules=false",
			off: []Feature{RestartAllContainersOnContainerExits, ContainerRestartRules}},
		{in: "ExecProbeTimeout=true,ChangeContainerStatusOnKubeletRestart=false", on: []Feature{ExecProbeTimeout}},

		{in: "Foo=true", fail: "unrecognized feature gate: Foo"},
		{in: "AllAlpha=true", fail: "cannot set feature gate AllAlpha: probeactor implements only the gates it names (ChangeContainerStatusOnKubeletRestart, " +
			"ContainerRestartRules, ExecProbeTimeout, GRPCContainerProbeTLS, H2CContainerProbe, KubeletCrashLoopBackOffMax, NodeDeclaredFeatures, " +
			"PodObservedGenerationTracking, ReduceDefaultCrashLoopBackOffDecay, RestartAllContainersOnContainerExits)"},
		{in: "h2ccontainerprobe=true", fail: "unrecognized feature gate: h2ccontainerprobe"},
		{in: "H2CContainerProbe", fail: "missing bool value for H2CContainerProbe"},
		{in: "H2CContainerProbe=yes", fail: `invalid value of H2CContainerProbe=yes, err: strconv.ParseBool: parsing "yes": invalid syntax`},
		{in: "ExecProbeTimeout=false", fail: "cannot set feature gate ExecProbeTimeout to false, feature is locked to true"},
		{in: "ChangeContainerStatusOnKubeletRestart=true",
			fail: "cannot set feature gate ChangeContainerStatusOnKubeletRestart to true: probeactor implements only ChangeContainerStatusOnKubeletRestart=false"},
		{in: "ContainerRestartRules=false",
			fail: "RestartAllContainersOnContainerExits is enabled, but depends on features that are disabled: [ContainerRestartRules]"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			g, err := Parse(tc.in)
			if tc.fail != "" {
				require.EqualError(t, err, tc.fail)
				return
			}
			require.NoError(t, err)
			for _, f := range tc.on {
				assert.True(t, g.Enabled(f), "%s", f)
			}
			for _, f := range tc.off {
				assert.False(t, g.Enabled(f), "%s", f)
			}
			if tc.str != "" {
				assert.Equal(t, tc.str, g.String())
			}
		})
	}
}

// TestSetMergesAndLeavesTheValueOnError: repeated flags accumulate; a refused value changes nothing;
// a copy taken before a Set does not see it.
func TestSetMergesAndLeavesTheValueOnError(t *testing.T) {
	var g Gates
	require.NoError(t, g.Set("H2CContainerProbe=true"))
	before := g
	require.NoError(t, g.Set("GRPCContainerProbeTLS=true"))
	assert.True(t, g.Enabled(H2CContainerProbe))
	assert.True(t, g.Enabled(GRPCContainerProbeTLS))
	assert.False(t, before.Enabled(GRPCContainerProbeTLS), "a copy is not changed by a later Set")
	assert.Error(t, g.Set("H2CContainerProbe=false,Nope=true"))
	assert.True(t, g.Enabled(H2CContainerProbe), "an error leaves the gates as they were")
	assert.Equal(t, "H2CContainerProbe=true,GRPCContainerProbeTLS=true", g.String())
	require.NoError(t, g.Set("RestartAllContainersOnContainerExits=false"))
	require.NoError(t, g.Set("ContainerRestartRules=false"), "the dependency is checked on the merged gates")
	assert.Error(t, g.Set("RestartAllContainersOnContainerExits=true"))
}

// TestIsAFlagValue: node's --feature-gates is a flag.Value; a bad value is a usage error naming it.
func TestIsAFlagValue(t *testing.T) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var g Gates
	fs.Var(&g, "feature-gates", "")
	require.NoError(t, fs.Parse([]string{"--feature-gates=H2CContainerProbe=true", "--feature-gates", "GRPCContainerProbeTLS=true"}))
	assert.True(t, g.Enabled(H2CContainerProbe) && g.Enabled(GRPCContainerProbeTLS))
	err := fs.Parse([]string{"--feature-gates=Bogus=true"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unrecognized feature gate: Bogus")
}

func TestDescribe(t *testing.T) {
	d := Describe()
	assert.Contains(t, d, "H2CContainerProbe=true|false (ALPHA - default=false)\n")
	assert.Contains(t, d, "ContainerRestartRules=true|false (BETA - default=true)\n")
	assert.Contains(t, d, "ExecProbeTimeout=true|false (GA - default=true)\n")
	assert.Contains(t, d, "ChangeContainerStatusOnKubeletRestart=true|false (DEPRECATED - default=false)\n")
}
