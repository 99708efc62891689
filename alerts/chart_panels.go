package alerts

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// stackedBars draws one bar per bucket made of each provider's cost, each
// segment starting where the one below it ends. Layers are bottom first.
type stackedBars struct {
	layers [][]float64
	colors []color.Color
	width  float64 // in buckets
}

// Plot draws the bars.
func (s stackedBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	if len(s.layers) == 0 {
		return
	}
	for b := range s.layers[0] {
		base := 0.0
		for i, layer := range s.layers {
			v := layer[b]
			if v <= 0 {
				continue
			}
			x0, x1 := trX(float64(b)-s.width/2), trX(float64(b)+s.width/2)
			y0, y1 := trY(base), trY(base+v)
			pts := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
			c.FillPolygon(s.colors[i], c.ClipPolygonXY(pts))
			base += v
		}
	}
}

// DataRange covers the buckets and the tallest bar.
func (s stackedBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	if len(s.layers) == 0 {
		return 0, 0, 0, 0
	}
	for b := range s.layers[0] {
		sum := 0.0
		for _, l := range s.layers {
			sum += l[b]
		}
		ymax = math.Max(ymax, sum)
	}
	return -0.5, float64(len(s.layers[0])) - 0.5, 0, ymax
}

// box is a legend thumbnail: a filled square.
type box struct{ c color.Color }

// Thumbnail fills the legend cell.
func (b box) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(b.c, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}

// costPanel is the stacked cost bars and their legend (only providers that
// cost something in the window, top of the stack first).
func (cd *chartData) costPanel() (*plot.Plot, plot.Legend) {
	p := cd.newPanel(fmt.Sprintf("Cost per provider per %s (USD)", cd.unit()), "USD")
	legend := panelLegend()
	bars := stackedBars{width: 0.75}
	var names []string
	total := 0.0
	for _, name := range cd.providers {
		vals := cd.cost[name]
		sum := 0.0
		for _, v := range vals {
			sum += v
		}
		if sum <= 0 {
			continue
		}
		total += sum
		bars.layers = append(bars.layers, vals)
		bars.colors = append(bars.colors, providerColor(name))
		names = append(names, name+" "+usd2(sum))
	}
	if total <= 0 {
		p.Y.Min, p.Y.Max = 0, 1
		p.Y.Tick.Marker = plot.ConstantTicks{}
		cd.noData(p, 0.5, "no cost in this window")
		return p, legend
	}
	p.Add(bars)
	_, _, _, top := bars.DataRange()
	p.Y.Min, p.Y.Max = 0, top*1.08
	for i := len(names) - 1; i >= 0; i-- { // the legend reads like the stack
		legend.Add(names[i], box{bars.colors[i]})
	}
	return p, legend
}

// qualityPanel is the quality trend: per provider the mean score of its
// accepted answers per bucket, rejected answers as ×, the pass mark.
func (cd *chartData) qualityPanel() (*plot.Plot, plot.Legend, error) {
	p := cd.newPanel(fmt.Sprintf("Quality per %s: mean of accepted answers", cd.unit()), "score")
	legend := panelLegend()
	p.Y.Min, p.Y.Max = 0, 100
	p.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 20, Label: "20"}, {Value: 40, Label: "40"},
		{Value: 60, Label: "60"}, {Value: 80, Label: "80"}, {Value: 100, Label: "100"}}
	pass, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: cd.threshold}, {X: p.X.Max, Y: cd.threshold}})
	if err != nil {
		return nil, legend, err
	}
	pass.Color, pass.Width, pass.Dashes = color.RGBA{200, 0, 0, 255}, vg.Points(2), []vg.Length{vg.Points(8), vg.Points(5)}
	p.Add(pass)
	any, rejected := false, false
	lines := map[string]plot.Thumbnailer{}
	for _, name := range cd.drawOrder() {
		pts := cd.points[name]
		any = true
		col := color.Color(color.Black)
		if name != "" {
			col = providerColor(name)
		}
		ok, err := cd.meanLine(p, pts, col, name == "")
		if err != nil {
			return nil, legend, err
		}
		rej, err := cd.rejectMarks(p, pts, col)
		if err != nil {
			return nil, legend, err
		}
		rejected = rejected || rej
		if ok != nil {
			lines[name] = ok
		}
	}
	for _, name := range append([]string{""}, cd.providers...) { // the legend: published, then by name
		if l, ok := lines[name]; ok {
			label := name
			if name == "" {
				label = "published"
			}
			legend.Add(label, l)
		}
	}
	if !any {
		cd.noData(p, 50, "no scored answers in this window")
		return p, legend, nil
	}
	legend.Add(fmt.Sprintf("pass mark %.0f", cd.threshold), pass)
	if rejected {
		legend.Add("rejected answer", crossThumb())
	}
	return p, legend, nil
}

// drawOrder is the order the quality lines are drawn in, bottom first:
// the providers with the most scores first (a dense line under a sparse
// one, so that a provider seldom used, such as a fallback, stays visible),
// then the published jobs' line on top of all (thin and dashed, so the
// line of the provider it follows shows through). Only series with scores.
func (cd *chartData) drawOrder() []string {
	var names []string
	for _, name := range cd.providers {
		if len(cd.points[name]) > 0 {
			names = append(names, name)
		}
	}
	sort.SliceStable(names, func(i, j int) bool { return len(cd.points[names[i]]) > len(cd.points[names[j]]) })
	if len(cd.points[""]) > 0 {
		names = append(names, "")
	}
	return names
}

// bucketMeans is the mean of the accepted scores (at or above the pass
// mark) of each bucket, by the bucket each score's time falls in; n counts
// them (0: no mean).
func (cd *chartData) bucketMeans(pts []scoreAt) (mean []float64, n []int) {
	mean = make([]float64, len(cd.buckets))
	n = make([]int, len(cd.buckets))
	for _, s := range pts {
		if s.score < cd.threshold {
			continue
		}
		b := bucketOf(s.x)
		if b < 0 || b >= len(mean) {
			continue
		}
		mean[b] += s.score
		n[b]++
	}
	for b := range mean {
		if n[b] > 0 {
			mean[b] /= float64(n[b])
		}
	}
	return mean, n
}

// meanLine draws the mean of the accepted scores of each bucket that has
// some; it returns the line for the legend (nil when none is accepted).
func (cd *chartData) meanLine(p *plot.Plot, pts []scoreAt, col color.Color, published bool) (plot.Thumbnailer, error) {
	mean, n := cd.bucketMeans(pts)
	var dots plotter.XYs
	for _, s := range pts {
		if b := bucketOf(s.x); s.score >= cd.threshold && b >= 0 && b < len(mean) {
			dots = append(dots, plotter.XY{X: s.x, Y: s.score})
		}
	}
	var xy plotter.XYs
	for b := range mean {
		if n[b] > 0 {
			xy = append(xy, plotter.XY{X: float64(b), Y: mean[b]})
		}
	}
	if len(xy) == 0 {
		return nil, nil
	}
	if cd.hourly && !published && len(dots) > 0 { // few answers: show each
		sc, err := plotter.NewScatter(dots)
		if err != nil {
			return nil, err
		}
		c := color.NRGBAModel.Convert(col).(color.NRGBA)
		c.A = 110
		sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
		p.Add(sc)
	}
	line, marks, err := plotter.NewLinePoints(xy)
	if err != nil {
		return nil, err
	}
	line.Color, line.Width = col, vg.Points(3)
	marks.Color, marks.Radius, marks.Shape = col, vg.Points(4), draw.CircleGlyph{}
	if published {
		line.Width, line.Dashes = vg.Points(2), []vg.Length{vg.Points(3), vg.Points(3)}
		marks.Radius = vg.Points(2)
	}
	p.Add(line, marks)
	return line, nil
}

// rejectMarks draws each rejected answer (below the pass mark) as a ×.
func (cd *chartData) rejectMarks(p *plot.Plot, pts []scoreAt, col color.Color) (bool, error) {
	var xy plotter.XYs
	for _, s := range pts {
		if s.score < cd.threshold {
			xy = append(xy, plotter.XY{X: s.x, Y: math.Max(s.score, 1)})
		}
	}
	if len(xy) == 0 {
		return false, nil
	}
	sc, err := plotter.NewScatter(xy)
	if err != nil {
		return false, err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(6), Shape: draw.CrossGlyph{}}
	p.Add(sc)
	return true, nil
}

// crossThumb is the legend's mark of a rejected answer.
func crossThumb() plot.Thumbnailer {
	sc, _ := plotter.NewScatter(plotter.XYs{{}})
	sc.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(6), Shape: draw.CrossGlyph{}}
	return sc
}
