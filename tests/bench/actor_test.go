package bench

import "github.com/probeactor/probeactor/tests/conformance"

func init() { impls = append(impls, impl{name: "actor", start: conformance.NewActor}) }
