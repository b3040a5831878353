package upstream

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	_ "k8s.io/kubernetes/pkg/features" // registers kubelet's gates on utilfeature.DefaultMutableFeatureGate

	"github.com/probeactor/probeactor/features"
)

// TestFeatureGatesAreKubelets: every gate package features knows is declared as kubelet 1.37.2
// declares it (default, stage, lock), and kubelet's --feature-gates values are accepted or refused
// alike, with kubelet's error text, and give the same gates. What probeactor does not implement is
// refused with its own text though kubelet accepts it: ChangeContainerStatusOnKubeletRestart=true,
// and AllAlpha/AllBeta (every gate of a stage, most of which probeactor does not know).
func TestFeatureGatesAreKubelets(t *testing.T) {
	upstream := utilfeature.DefaultMutableFeatureGate.GetAll()
	var defaults features.Gates
	for _, f := range features.Known() {
		spec, ok := features.SpecOf(f)
		require.True(t, ok, "%s", f)
		u, known := upstream[featuregate.Feature(f)]
		require.True(t, known, "kubelet 1.37.2 has no gate %s", f)
		assert.Equal(t, u.Default, spec.Default, "%s default", f)
		assert.Equal(t, string(u.PreRelease), string(spec.Stage), "%s stage", f)
		assert.Equal(t, u.LockToDefault, spec.Locked, "%s locked", f)
		assert.Equal(t, utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(f)), defaults.Enabled(f), "%s", f)
	}

	for _, value := range []string{
		"",
		"H2CContainerProbe=true,GRPCContainerProbeTLS=true",
		" H2CContainerProbe = 1 ,,",
		"RestartAllContainersOnContainerExits=false",
		"RestartAllContainersOnContainerExits=false,ContainerRestartRules=false",
		"ContainerRestartRules=false",
		"KubeletCrashLoopBackOffMax=false,ReduceDefaultCrashLoopBackOffDecay=true",
		"ExecProbeTimeout=false",
		"ExecProbeTimeout=true",
		"NodeDeclaredFeatures=false",
		"PodObservedGenerationTracking=false",
		"PodObservedGenerationTracking=true",
		"H2CContainerProbe",
		"H2CContainerProbe=maybe",
		"NoSuchGate=true",
	} {
		t.Run(value, func(t *testing.T) {
			k := utilfeature.DefaultMutableFeatureGate.DeepCopy()
			kerr := k.Set(value)
			ours, oerr := features.Parse(value)
			if kerr != nil {
				require.Error(t, oerr, "kubelet refuses it: %v", kerr)
				assert.Equal(t, kerr.Error(), oerr.Error())
				return
			}
			require.NoError(t, oerr)
			for _, f := range features.Known() {
				assert.Equal(t, k.Enabled(featuregate.Feature(f)), ours.Enabled(f), "%s", f)
			}
		})
	}

	for value, refusal := range map[string]string{
		"ChangeContainerStatusOnKubeletRestart=true": "cannot set feature gate ChangeContainerStatusOnKubeletRestart to true: " +
			"probeactor implements only ChangeContainerStatusOnKubeletRestart=false",
		"AllBeta=true":                  "cannot set feature gate AllBeta: probeactor implements only the gates it names",
		"AllAlpha=true,AllBeta=true":    "cannot set feature gate AllAlpha: probeactor implements only the gates it names",
		"AllAlpha=false,AllBeta=false ": "cannot set feature gate AllAlpha: probeactor implements only the gates it names",
	} {
		k := utilfeature.DefaultMutableFeatureGate.DeepCopy()
		require.NoError(t, k.Set(value), "kubelet accepts %s", value)
		_, err := features.Parse(value)
		require.Error(t, err, value)
		assert.Contains(t, err.Error(), refusal)
	}
}
