package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// RateTolerance is how far a run's probes/s may be from the due rate for the run to count.
const RateTolerance = 0.03

// FailedTolerance is the share of a run's probes that may fail (time out: on a machine shared with
// other jobs the target is now and then not scheduled within a probe's 1 s) for the run to count.
const FailedTolerance = 0.01

// Run is one prober's measurement window.
type Run struct {
	Prober string // "bare", "node" or "baseline" (a second node binary, -baseline)
	Round  int
	Window time.Duration
	Probes int64 // what the target counted over the window (HTTP requests + TCP connections)
	// CPU is the prober process's own user + system CPU over the window; for node, Shims and
	// Containers are its children's and theirs below (not in CPU).
	CPU, Shims, Containers time.Duration
	NShims, NContainers    int
	Failed                 int64 // probes that did not succeed (bare: its own count; node: prober_probe_total)
	Restarts               int   // node: containers' restart counts at the end
	Load                   string
}

// PerProbe is the prober's CPU per probe, µs.
func (r Run) PerProbe() float64 { return perProbe(r.CPU, r.Probes) }

func perProbe(cpu time.Duration, probes int64) float64 {
	if probes <= 0 {
		return math.NaN()
	}
	return float64(cpu.Microseconds()) / float64(probes)
}

// Rate is the probes per second the run achieved.
func (r Run) Rate() float64 { return float64(r.Probes) / r.Window.Seconds() }

// Invalid says why the run does not count ("" when it does): probes/s off the due rate (2 × pods a
// second) by more than RateTolerance, more than FailedTolerance of its probes failed, a container
// restarted.
func (r Run) Invalid(pods int) string {
	due := float64(2 * pods)
	var why []string
	if math.Abs(r.Rate()-due) > RateTolerance*due {
		why = append(why, fmt.Sprintf("%s probed %.0f/s, not %.0f/s ±%.0f %%", r.Prober, r.Rate(), due, RateTolerance*100))
	}
	if float64(r.Failed) > FailedTolerance*float64(r.Probes) {
		why = append(why, fmt.Sprintf("%s: %d of %d probes failed", r.Prober, r.Failed, r.Probes))
	}
	if r.Restarts > 0 {
		why = append(why, fmt.Sprintf("%s: %d container restarts", r.Prober, r.Restarts))
	}
	return strings.Join(why, "; ")
}

// Line is the run's report line.
func (r Run) Line() string {
	s := fmt.Sprintf("round %d %-8s %6.0f probes/s %7.1f µs/probe (%4.1f %% of a core)", r.Round, r.Prober, r.Rate(), r.PerProbe(),
		100*r.CPU.Seconds()/r.Window.Seconds())
	if r.Prober != "bare" {
		s += fmt.Sprintf("; %d shims %.1f µs/probe, %d containers %.1f µs/probe; restarts %d",
			r.NShims, perProbe(r.Shims, r.Probes), r.NContainers, perProbe(r.Containers, r.Probes), r.Restarts)
	}
	return s + fmt.Sprintf("; failed %d; load %s", r.Failed, r.Load)
}

// Summary is the benchmark's result over its rounds.
type Summary struct {
	Pods               int
	Window             time.Duration
	Rounds             int
	Node, Bare         float64 // median µs/probe
	NodeRate, BareRate float64 // median probes/s
	NodeShims          float64 // median µs/probe of node's shims
	Ratio              float64 // Node / Bare
	PairRatios         []float64
	Baseline           float64 // median µs/probe of the -baseline node (NaN: none)
	BaselineRatio      float64 // Baseline / Bare
	BaselinePairs      []float64
	Invalid            []string
}

// Summarise takes the medians of node's and bare's runs; each round's pair also gets its own ratio.
func Summarise(pods int, window time.Duration, runs []Run) Summary {
	s := Summary{Pods: pods, Window: window}
	var node, bare, baseline, nodeRate, bareRate, shims []float64
	byRound := map[int]map[string]float64{}
	for _, r := range runs {
		if why := r.Invalid(pods); why != "" {
			s.Invalid = append(s.Invalid, fmt.Sprintf("round %d: %s", r.Round, why))
		}
		if byRound[r.Round] == nil {
			byRound[r.Round] = map[string]float64{}
		}
		byRound[r.Round][r.Prober] = r.PerProbe()
		switch r.Prober {
		case "node":
			node, nodeRate = append(node, r.PerProbe()), append(nodeRate, r.Rate())
			shims = append(shims, perProbe(r.Shims, r.Probes))
		case "bare":
			bare, bareRate = append(bare, r.PerProbe()), append(bareRate, r.Rate())
		case "baseline":
			baseline = append(baseline, r.PerProbe())
		default:
		}
		s.Rounds = max(s.Rounds, r.Round)
	}
	rounds := make([]int, 0, len(byRound))
	for k := range byRound {
		rounds = append(rounds, k)
	}
	slices.Sort(rounds)
	for _, k := range rounds {
		p := byRound[k]
		if b, ok := p["bare"]; ok {
			if n, ok := p["node"]; ok {
				s.PairRatios = append(s.PairRatios, n/b)
			}
			if n, ok := p["baseline"]; ok {
				s.BaselinePairs = append(s.BaselinePairs, n/b)
			}
		}
	}
	if len(node) == 0 || len(bare) == 0 {
		s.Invalid = append(s.Invalid, "a prober has no run")
	}
	s.Node, s.Bare, s.Baseline = Median(node), Median(bare), Median(baseline)
	s.NodeRate, s.BareRate, s.NodeShims = Median(nodeRate), Median(bareRate), Median(shims)
	s.Ratio, s.BaselineRatio = s.Node/s.Bare, s.Baseline/s.Bare
	return s
}

// Valid says whether every run counted.
func (s Summary) Valid() bool { return len(s.Invalid) == 0 }

// String is the last line.
func (s Summary) String() string {
	verdict := "valid"
	if !s.Valid() {
		verdict = "INVALID (" + strings.Join(s.Invalid, "; ") + ")"
	}
	base := ""
	if !math.IsNaN(s.Baseline) {
		base = fmt.Sprintf("baseline=%.1f µs/probe baseline-ratio=%.2f (pairs %s) ", s.Baseline, s.BaselineRatio, ratios(s.BaselinePairs))
	}
	return fmt.Sprintf("nodebench: pods=%d window=%v rounds=%d node=%.1f µs/probe bare=%.1f µs/probe ratio=%.2f (pairs %s) %s"+
		"node-probes/s=%.0f bare-probes/s=%.0f node-shims=%.1f µs/probe %s",
		s.Pods, s.Window, s.Rounds, s.Node, s.Bare, s.Ratio, ratios(s.PairRatios), base, s.NodeRate, s.BareRate, s.NodeShims, verdict)
}

func ratios(rs []float64) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%.2f", r)
	}
	return strings.Join(out, " ")
}

// Median of xs (NaN when empty); xs is not changed.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
