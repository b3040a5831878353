package conformance

import (
	"fmt"

	"github.com/probeactor/probeactor/messages"
	"github.com/probeactor/probeactor/tests/kubeletstyle"
)

// KubeletDriver drives the kubelet-style baseline.
type KubeletDriver struct {
	*kubeletstyle.Kubelet
}

var _ Driver = KubeletDriver{}

// NewKubelet starts the baseline with env (no jitter unless env.Rand is set).
func NewKubelet(env Env) (Driver, error) {
	opts := kubeletstyle.Options{
		Prober:       env.Prober,
		Runtime:      env.Runtime,
		Rand:         env.Rand,
		JitterWindow: env.JitterWindow,
		OnBlocked:    env.OnBlocked,
	}
	if opts.Rand == nil {
		opts.Rand = func() float64 { return 0 }
	}
	if env.OnChange != nil {
		opts.OnUpdate = func(pt messages.ProbeType, u kubeletstyle.Update) {
			env.OnChange(Change{PodUID: u.PodUID, ContainerID: u.ContainerID, Type: pt, Result: u.Result})
		}
	}
	k, err := kubeletstyle.Start(opts)
	if err != nil {
		return nil, fmt.Errorf("start kubelet-style baseline: %w", err)
	}
	return KubeletDriver{k}, nil
}
