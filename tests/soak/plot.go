package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// panel is one tile of the plot: series sharing a y axis.
type panel struct {
	title  string
	yLabel string
	scale  float64 // values are divided by it (1<<20: MiB)
	series []string
}

var panels = []panel{
	{"node's resident memory", "MiB", 1 << 20, []string{"rss", "rss-anon", "rss-file"}},
	{"node's heap (live, spans and free: right after a forced GC)", "MiB", 1 << 20, []string{"heap-live", "heap-spans", "heap-free", "heap-alloc", "heap-retained", "stacks"}},
	{"node's CPU", "cores", 1, []string{"cpu"}},
	{"node's OS threads", "threads", 1, []string{"threads"}},
	{"node's goroutines (least and most of each sample's reads)", "goroutines", 1, []string{"goroutines", "goroutines-peak"}},
	{"node's open descriptors (least and most)", "fds", 1, []string{"fds", "fds-peak"}},
	{"actor tree", "entries / messages", 1, []string{"scheduler-entries", "mailbox-messages", "mailbox-max"}},
	{"processes below node (not counted above)", "processes", 1, []string{"children"}},
	{"their resident memory", "MiB", 1 << 20, []string{"children-rss"}},
	{"pods node reports", "pods", 1, []string{"pods", "ready-pods"}},
	{"machine load (1 min)", "load", 1, []string{"load1"}},
}

// WritePlot draws every panel over the run's minutes, with the warm-up (the growth baseline)
// marked, as a PNG titled title.
func WritePlot(w io.Writer, title string, samples []Sample, warmup time.Duration) error {
	end := 1.0
	if len(samples) > 0 {
		end = max(end, samples[len(samples)-1].At.Minutes())
	}
	byName := map[string]Series{}
	for _, s := range AllSeries {
		byName[s.Name] = s
	}
	const cols = 2
	rows := (len(panels) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = "minutes"
		p.Y.Label.Text = pn.yLabel
		p.Legend.Top = true
		p.Legend.Left = true
		p.X.Min, p.X.Max = 0, end
		lo, hi := math.Inf(1), math.Inf(-1)
		drawn := 0
		for k, name := range pn.series {
			var xys plotter.XYs
			for _, smp := range samples {
				v := byName[name].Value(smp)
				if math.IsNaN(v) || math.IsInf(v, 0) {
					continue
				}
				xys = append(xys, plotter.XY{X: smp.At.Minutes(), Y: v / pn.scale})
				lo, hi = min(lo, v/pn.scale), max(hi, v/pn.scale)
			}
			if len(xys) == 0 {
				continue
			}
			l, err := plotter.NewLine(xys)
			if err != nil {
				return fmt.Errorf("plot %s: %w", name, err)
			}
			l.Color = plotutil.Color(k)
			l.Width = vg.Points(1.5)
			p.Add(l)
			p.Legend.Add(name, l)
			drawn++
		}
		if drawn == 0 {
			p.Title.Text += ": n/a (node does not expose it)"
			p.Y.Min, p.Y.Max = 0, 1
		} else {
			if lo == hi {
				lo, hi = lo-1, hi+1
			}
			p.Y.Min = min(0, lo)
			p.Y.Max = hi + (hi-min(0, lo))*0.15 // room for the legend
			mark, err := plotter.NewLine(plotter.XYs{{X: warmup.Minutes(), Y: p.Y.Min}, {X: warmup.Minutes(), Y: p.Y.Max}})
			if err != nil {
				return err
			}
			mark.Color = color.Gray{Y: 140}
			mark.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
			p.Add(mark)
		}
		p.Add(plotter.NewGrid())
		grid[i/cols][i%cols] = p
	}
	img := vgimg.New(vg.Points(1100), vg.Points(float64(230*rows+40)))
	dc := draw.New(img)
	ts := plot.New().Title.TextStyle
	ts.Font.Size = vg.Points(13)
	ts.XAlign, ts.YAlign = draw.XCenter, draw.YCenter
	dc.FillText(ts, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - vg.Points(15)}, title)
	body := dc
	body.Max.Y -= vg.Points(35)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(20), PadY: vg.Points(20),
		PadTop: vg.Points(5), PadBottom: vg.Points(10), PadLeft: vg.Points(10), PadRight: vg.Points(15)}
	canvases := plot.Align(grid, tiles, body)
	for r := range grid {
		for c := range grid[r] {
			if grid[r][c] != nil {
				grid[r][c].Draw(canvases[r][c])
			}
		}
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}
