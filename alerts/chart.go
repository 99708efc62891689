package alerts

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"image/color"
	"math"
	"sort"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/contentpipe/contentpipe/telemetry"
)

// Chart size and type sizes: 1200×900 px with large type, so that the
// image read on a phone (shown about 1:1 on a 3× screen) needs no zoom.
const (
	chartW, chartH = 1200, 900 // pixels at 96 dpi
	chartDPI       = 96
	legendW        = 250 // pixels of the legend column right of the panels
	titleSize      = 26  // points
	labelSize      = 20
	tickSize       = 18
)

// defaultThreshold is the quality gate's default pass mark (see
// quality.Settings.Threshold), used when ChartOptions.Threshold is 0.
const defaultThreshold = 70

// ChartOptions says how to draw the chart. The zero value draws the window
// trimmed to the days that have data, with the default pass mark.
type ChartOptions struct {
	// FullWindow draws every day of the report window (the --days the user
	// asked for) instead of only the days with data.
	FullWindow bool
	// Threshold is the quality gate's pass mark (0 means 70): the line drawn
	// on the quality panel; scores below it are rejected answers.
	Threshold float64
}

// providerColor is a provider's colour, the same in both panels and in
// every chart (by name, not by its place in the window): the Okabe–Ito
// palette, readable by colour-blind readers. The providers the README
// knows have their own; any other name is hashed onto the palette.
func providerColor(name string) color.Color {
	if c, ok := knownColors[name]; ok {
		return c
	}
	h := fnv.New32a()
	h.Write([]byte(name)) //nolint:errcheck
	return palette[h.Sum32()%uint32(len(palette))]
}

var palette = [...]color.RGBA{
	{0, 114, 178, 255}, {213, 94, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255},
	{230, 159, 0, 255}, {86, 180, 233, 255}, {100, 100, 100, 255}, {240, 228, 66, 255},
}

var knownColors = map[string]color.RGBA{
	"gemini": palette[0], "groq": palette[1], "cerebras": palette[2], "openrouter": palette[3],
}

// Chart draws the report's chart as a PNG (1200×900 px): on top the cost of
// each provider per day (per hour when the data spans at most two days) as
// stacked bars, with a legend of the providers that cost something; below
// the quality of each provider's answers: the mean of its accepted
// answers per bucket as a line, each rejected answer as a red ×, the pass
// mark as a dashed line, on a fixed 0–100 axis. A panel without data says
// so instead of drawing nothing.
//
// Drawing is bounded by ChartTimeout: past it Chart returns an error and
// leaves the drawing to end on its own.
func Chart(d telemetry.ReportData, opt ChartOptions) ([]byte, error) {
	type result struct {
		png []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		png, err := drawChart(d, opt)
		done <- result{png, err}
	}()
	timer := time.NewTimer(ChartTimeout)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.png, r.err
	case <-timer.C:
		return nil, fmt.Errorf("drawing the chart took more than %s: not drawn (the report's text has every figure)", ChartTimeout)
	}
}

// ChartTimeout bounds the drawing of one chart (a variable for the tests).
var ChartTimeout = 20 * time.Second

// drawChart is Chart without its time bound.
func drawChart(d telemetry.ReportData, opt ChartOptions) ([]byte, error) {
	cd := newChartData(d, opt)
	cost, costLegend := cd.costPanel()
	qual, qualLegend, err := cd.qualityPanel()
	if err != nil {
		return nil, fmt.Errorf("chart quality panel: %w", err)
	}
	px := func(n float64) vg.Length { return vg.Length(n) * vg.Inch / chartDPI }
	c := vgimg.NewWith(vgimg.UseWH(px(chartW), px(chartH)), vgimg.UseDPI(chartDPI), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(c)
	left := draw.Crop(dc, 0, -px(legendW), 0, 0)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: px(12), PadBottom: px(8), PadLeft: px(8), PadRight: px(16), PadY: px(36)}
	canvases := plot.Align([][]*plot.Plot{{cost}, {qual}}, tiles, left)
	cost.Draw(canvases[0][0])
	qual.Draw(canvases[1][0])
	for i, l := range []plot.Legend{costLegend, qualLegend} {
		r := canvases[i][0].Rectangle
		lc := draw.Canvas{Canvas: dc, Rectangle: vg.Rectangle{Min: vg.Point{X: px(chartW - legendW), Y: r.Min.Y}, Max: vg.Point{X: px(chartW - 8), Y: r.Max.Y - px(48)}}}
		l.Draw(lc)
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encode chart png: %w", err)
	}
	return buf.Bytes(), nil
}

// chartData is the report's data cut into the chart's buckets.
type chartData struct {
	threshold float64
	hourly    bool
	buckets   []time.Time // bucket starts, oldest first
	step      time.Duration
	providers []string             // every provider of the window, by name; index = colour
	cost      map[string][]float64 // provider → cost per bucket
	points    map[string][]scoreAt // provider ("" = published) → scores in the window
	omitted   int                  // values not drawn: not finite or out of range (see drawable)
}

// maxChartCost is the largest cost of one bucket's row the chart draws (in
// USD); a larger one is a broken price, not spending.
const maxChartCost = 1e6

// drawable reports whether v can be drawn on an axis from lo to hi: a
// finite number inside the range. Anything else (an infinite price's cost,
// a NaN) would send the rasterizer into coordinates it never finishes.
func drawable(v, lo, hi float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= lo && v <= hi
}

// omittedNote is the x-axis label of a panel when values were left out.
func (cd *chartData) omittedNote() string {
	if cd.omitted == 0 {
		return ""
	}
	return fmt.Sprintf("%d value(s) not drawn: not finite or out of range (see contentpipe report)", cd.omitted)
}

type scoreAt struct {
	x     float64 // bucket index plus the position inside the bucket
	score float64
}

func newChartData(d telemetry.ReportData, opt ChartOptions) *chartData {
	cd := &chartData{threshold: opt.Threshold, cost: map[string][]float64{}, points: map[string][]scoreAt{}}
	if cd.threshold <= 0 {
		cd.threshold = defaultThreshold
	}
	first, last := cd.dataSpan(d)
	if opt.FullWindow || first.IsZero() {
		first, last = d.Since, d.Until.Add(-time.Nanosecond)
	}
	day := func(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC) }
	cd.step = 24 * time.Hour
	start, end := day(first), day(last).Add(cd.step)
	if !opt.FullWindow && end.Sub(start) <= 48*time.Hour {
		cd.hourly, cd.step = true, time.Hour
		start, end = first.Truncate(time.Hour), last.Truncate(time.Hour).Add(time.Hour)
		// Room to read, at least six hours, taken from the past: the axis
		// never runs past the hour the window ends in.
		for end.Sub(start) < 6*time.Hour {
			start = start.Add(-time.Hour)
		}
	}
	for t := start; t.Before(end); t = t.Add(cd.step) {
		cd.buckets = append(cd.buckets, t)
	}
	cd.providers = chartProviders(d)
	cd.fill(d)
	return cd
}

// dataSpan is the first and last instant of the window with a call or a
// score; zero when there is none.
func (cd *chartData) dataSpan(d telemetry.ReportData) (first, last time.Time) {
	see := func(t time.Time) {
		if t.Before(d.Since) || !t.Before(d.Until) {
			return
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	for _, c := range d.HourlyCost {
		if t, err := time.Parse("2006-01-02T15", c.Day); err == nil {
			see(t)
			see(t.Add(59 * time.Minute))
		}
	}
	for _, s := range d.QualitySeries {
		for _, p := range s.Points {
			see(p.TS)
		}
	}
	return first, last
}

// bucketX is the x position of t: its bucket's index plus its place in it,
// from −0.5 to +0.5 around the bucket's centre; ok is false outside.
func (cd *chartData) bucketX(t time.Time) (float64, bool) {
	if len(cd.buckets) == 0 || t.Before(cd.buckets[0]) {
		return 0, false
	}
	f := float64(t.Sub(cd.buckets[0])) / float64(cd.step)
	if f >= float64(len(cd.buckets)) {
		return 0, false
	}
	return f - 0.5, true
}

// bucketOf is the bucket of an x position from bucketX: the one whose
// start is at or before the instant (a floor, never the next bucket).
func bucketOf(x float64) int { return int(math.Floor(x + 0.5)) }

func (cd *chartData) fill(d telemetry.ReportData) {
	costs, layout := d.DailyCost, "2006-01-02"
	if cd.hourly {
		costs, layout = d.HourlyCost, "2006-01-02T15"
	}
	for _, c := range costs {
		t, err := time.Parse(layout, c.Day)
		if err != nil {
			continue
		}
		x, ok := cd.bucketX(t)
		if !ok {
			continue
		}
		if !drawable(c.CostUSD, 0, maxChartCost) {
			cd.omitted++
			continue
		}
		if cd.cost[c.Provider] == nil {
			cd.cost[c.Provider] = make([]float64, len(cd.buckets))
		}
		cd.cost[c.Provider][bucketOf(x)] += c.CostUSD
	}
	for _, s := range d.QualitySeries {
		for _, p := range s.Points {
			if p.TS.Before(d.Since) {
				continue
			}
			if !drawable(p.Score, 0, 100) {
				cd.omitted++
				continue
			}
			if x, ok := cd.bucketX(p.TS); ok {
				cd.points[s.Provider] = append(cd.points[s.Provider], scoreAt{x: x, score: p.Score})
			}
		}
	}
}

// chartProviders returns the providers of the window by name; a
// provider's index is its colour in both panels.
func chartProviders(d telemetry.ReportData) []string {
	seen := map[string]bool{}
	var names []string
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			names = append(names, p)
		}
	}
	for _, pc := range d.Providers {
		add(pc.Provider)
	}
	for _, s := range d.QualitySeries {
		add(s.Provider)
	}
	sort.Strings(names)
	return names
}

// newPanel starts a panel with the chart's type sizes and the buckets'
// labels on the x axis.
func (cd *chartData) newPanel(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = font.Length(titleSize)
	p.Title.Padding = vg.Points(8)
	p.Y.Label.Text = ylabel
	p.Y.Label.TextStyle.Font.Size = font.Length(labelSize)
	p.X.Tick.Label.Font.Size = font.Length(tickSize)
	p.Y.Tick.Label.Font.Size = font.Length(tickSize)
	p.X.Min, p.X.Max = -0.5, float64(len(cd.buckets))-0.5
	p.X.Tick.Marker = bucketTicks{cd}
	p.Add(plotter.NewGrid())
	if note := cd.omittedNote(); note != "" {
		p.X.Label.Text = note
		p.X.Label.TextStyle.Font.Size = font.Length(tickSize)
		p.X.Label.TextStyle.Color = color.RGBA{200, 0, 0, 255}
	}
	return p
}

// bucketTicks labels at most eight buckets: dates (MM-DD), or hours
// (HH:00, with the date at midnight and on the first); windows longer than
// two months are labelled on the first of a month (Feb, Mar, …; the year
// on January and on the first label), every month up to a year. Minor ticks mark each bucket only where they do
// not make a comb (at most 62 buckets).
type bucketTicks struct{ cd *chartData }

// Ticks returns the labelled positions.
func (b bucketTicks) Ticks(float64, float64) []plot.Tick {
	n := len(b.cd.buckets)
	if !b.cd.hourly && n > 62 {
		return monthTicks(b.cd.buckets)
	}
	step := max(1, (n+7)/8)
	var out []plot.Tick
	for i, t := range b.cd.buckets {
		if (n-1-i)%step != 0 {
			out = append(out, plot.Tick{Value: float64(i)}) // a minor tick
			continue
		}
		label := t.Format("01-02")
		if b.cd.hourly {
			label = t.Format("15:04")
			if t.Hour() == 0 || i == 0 {
				label = t.Format("01-02 15h")
			}
		}
		out = append(out, plot.Tick{Value: float64(i), Label: label})
	}
	return out
}

// monthTicks labels the first day of each month among days (every k-th
// month, so at most 12 labels) and puts a minor tick on the others' firsts.
func monthTicks(days []time.Time) []plot.Tick {
	var firsts []int
	for i, t := range days {
		if t.Day() == 1 {
			firsts = append(firsts, i)
		}
	}
	k := max(1, (len(firsts)+11)/12)
	var out []plot.Tick
	for j, i := range firsts {
		if j%k != 0 {
			out = append(out, plot.Tick{Value: float64(i)})
			continue
		}
		// Short names; the year on January and on the first label.
		label := days[i].Format("Jan")
		switch {
		case days[i].Month() == time.January:
			label = days[i].Format("2006")
		case j == 0:
			label = days[i].Format("Jan 06")
		}
		out = append(out, plot.Tick{Value: float64(i), Label: label})
	}
	return out
}

func (cd *chartData) unit() string {
	if cd.hourly {
		return "hour"
	}
	return "day"
}

// panelLegend is a legend for the column right of the panels.
func panelLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font.Size = font.Length(labelSize)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(22)
	l.Padding = vg.Points(6)
	return l
}

// noData writes a centred note on an empty panel.
func (cd *chartData) noData(p *plot.Plot, y float64, what string) {
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: float64(len(cd.buckets)-1) / 2, Y: y}}, Labels: []string{what}})
	if err != nil {
		return
	}
	l.TextStyle[0].XAlign = draw.XCenter
	l.TextStyle[0].Font.Size = font.Length(labelSize)
	p.Add(l)
}
