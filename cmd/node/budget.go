package main

import (
	"github.com/probeactor/probeactor/actors"
	"github.com/probeactor/probeactor/cluster/membership"
	"github.com/probeactor/probeactor/internal/restartbudget"
)

// budgetFlag is --restart-budget N/DURATION (unset: off, kubelet's immediate kills). A value
// restartbudget.Parse refuses is a usage error naming the flag (the flag package reports it).
type budgetFlag struct{ b *restartbudget.Budget }

func (f *budgetFlag) String() string {
	if f == nil || f.b == nil {
		return ""
	}
	return f.b.String()
}

func (f *budgetFlag) Set(s string) error {
	b, err := restartbudget.Parse(s)
	if err != nil {
		return err
	}
	f.b = &b
	return nil
}

// budgetUsage is --restart-budget's help.
const budgetUsage = "cap the kills liveness and startup failures cause on this node to `N/DURATION`, N per sliding DURATION (e.g. 3/10m; " +
	"with --cluster: across the cluster's members, each given the same budget); a kill beyond it waits, the container running " +
	"and reported not ready, and happens when the budget allows if the probe still fails; crashes are never held back. " +
	"Off by default (kubelet kills at once)"

// value is the budget (the zero Budget when off).
func (f budgetFlag) value() restartbudget.Budget {
	if f.b == nil {
		return restartbudget.Budget{}
	}
	return *f.b
}

// treeOptions is the probe tree's options for the budget (none when off): this node's own, or
// with --cluster the one the members share (member: its ledger decides which kills happen).
func (f budgetFlag) treeOptions(member *membership.Member) []actors.Option {
	switch {
	case f.b == nil:
		return nil
	case member != nil:
		return []actors.Option{actors.WithSharedRestartBudget(f.b.N, f.b.Window, member)}
	default:
		return []actors.Option{actors.WithRestartBudget(f.b.N, f.b.Window)}
	}
}
