package features_test

import (
	"fmt"

	"github.com/probeactor/probeactor/features"
)

// Gates read as kubelet reads --feature-gates; the zero value is kubelet 1.37.2's defaults.
func Example() {
	var defaults features.Gates
	fmt.Println(defaults.Enabled(features.ContainerRestartRules), defaults.Enabled(features.H2CContainerProbe))

	g, err := features.Parse("H2CContainerProbe=true,GRPCContainerProbeTLS=true")
	fmt.Println(g.Enabled(features.H2CContainerProbe), g.Enabled(features.GRPCContainerProbeTLS), err)

	_, err = features.Parse("InPlacePodVerticalScaling=true")
	fmt.Println(err)
	// Output:
	// true false
	// true true <nil>
	// unrecognized feature gate: InPlacePodVerticalScaling
}
