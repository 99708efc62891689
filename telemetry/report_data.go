package telemetry

import "time"

// ReportData is what `contentpipe report` shows for one window, as plain
// figures read from the database. Every window figure counts rows whose
// timestamp t has Since ≤ t < Until; days are UTC dates (YYYY-MM-DD).
type ReportData struct {
	Since, Until time.Time
	// HistoryFrom is where the decay series (QualitySeries,
	// FallbackSeries) start: one window length before Since, so that the
	// previous window is their baseline.
	HistoryFrom time.Time
	// FirstLink is the first link of the chain; a published job served by
	// any other provider counts as a fallback. Empty: fallback share unknown.
	FirstLink string
	Days      []string // every UTC date in the window, oldest first

	Providers []ProviderCalls // calls per provider, most expensive first
	Totals    ProviderCalls   // every call of the window (Provider "")
	DailyCost []DailyCost     // per day and provider, only pairs with calls; by day, then provider
	// HourlyCost is DailyCost per hour: Day holds the hour, "YYYY-MM-DDTHH".
	HourlyCost []DailyCost

	Jobs          map[string]int // jobs per current status, among jobs updated in the window
	Fallback      []DailyShare   // per day of the window (every day, also empty ones); nil without FirstLink
	FallbackTotal DailyShare     // the whole window (Day "")

	DailyQuality   []DailyQuality // mean score per day and provider; Provider "" = published jobs
	QualitySeries  []ScoreSeries  // per provider (job calls with a score) and "" (published jobs), from HistoryFrom
	FallbackSeries []FallbackPoint
	// PromptVersions is the gate's verdict per prompt version on the
	// window's answered job calls, most calls first.
	PromptVersions []PromptVersionQuality

	Shadow []ShadowStats  // per shadow provider, by name
	Review []ReviewJob    // the whole review queue (not only the window), oldest first
	Skips  []SkipCount    // per provider and reason, by provider then reason
	Health []HealthCheck  // health checks of the window, oldest first
	Alerts map[string]int // alerts created in the window per rule
	// Incidents are the incidents open at any time in the window, oldest first.
	Incidents []Incident
}

// Empty reports whether the window holds no calls, jobs, skips, shadow
// comparisons or health checks, and the review queue is empty.
func (d ReportData) Empty() bool {
	return d.Totals.Calls == 0 && len(d.Jobs) == 0 && len(d.Skips) == 0 && len(d.Shadow) == 0 &&
		len(d.Health) == 0 && len(d.Review) == 0
}

// ProviderCalls sums the calls rows of one provider (all purposes).
type ProviderCalls struct {
	Provider     string
	Model        string // the model of the provider's latest call in the window
	Calls        int
	OK           int
	Job          int            // calls with purpose job
	Shadow       int            // purpose shadow
	HealthChecks int            // purpose health
	Outcomes     map[string]int // calls per outcome other than ok
	InputTokens  int64
	OutputTokens int64
	CostUSD      float64
	MeanLatency  time.Duration // over calls with a latency
}

// SuccessRate is OK/Calls, 0 without calls.
func (p ProviderCalls) SuccessRate() float64 {
	if p.Calls == 0 {
		return 0
	}
	return float64(p.OK) / float64(p.Calls)
}

// DailyCost is the cost of one provider's calls on one day.
type DailyCost struct {
	Day      string
	Provider string
	Calls    int
	CostUSD  float64
}

// DailyShare counts published jobs and how many of them a fallback
// provider (not the first link) served.
type DailyShare struct {
	Day       string
	Published int
	Fallback  int
}

// Share is Fallback/Published, 0 when nothing was published.
func (s DailyShare) Share() float64 {
	if s.Published == 0 {
		return 0
	}
	return float64(s.Fallback) / float64(s.Published)
}

// DailyQuality is the mean quality score of one day: of one provider's
// scored job calls, or (Provider "") of the published jobs.
type DailyQuality struct {
	Day      string
	Provider string
	N        int
	Mean     float64
}

// ScorePoint is one quality score at its time.
type ScorePoint struct {
	TS    time.Time
	Score float64
}

// ScoreSeries is a provider's quality scores (every job call that was
// scored, rejected ones included), or for Provider "" the published jobs'
// scores by publication time; oldest first.
type ScoreSeries struct {
	Provider string
	Points   []ScorePoint
}

// Scores returns the scores alone, oldest first.
func (s ScoreSeries) Scores() []float64 {
	out := make([]float64, len(s.Points))
	for i, p := range s.Points {
		out[i] = p.Score
	}
	return out
}

// FallbackPoint is one published job: when, by whom, and whether that was
// a fallback provider.
type FallbackPoint struct {
	TS       time.Time
	Provider string
	Fallback bool
}

// ShadowStats sums the shadow comparisons of one shadow provider. A nil
// mean had no known value to average.
type ShadowStats struct {
	Provider       string
	Comparisons    int
	Passed         int      // the shadow answer would have passed the quality gate
	ShadowScore    *float64 // mean shadow score
	PrimaryScore   *float64 // mean primary score
	Delta          *float64 // mean (shadow − primary) where both are known
	ShadowCostUSD  float64
	PrimaryCostUSD float64
	ShadowLatency  time.Duration // mean
	PrimaryLatency time.Duration // mean
}

// PassRate is Passed/Comparisons, 0 without comparisons.
func (s ShadowStats) PassRate() float64 {
	if s.Comparisons == 0 {
		return 0
	}
	return float64(s.Passed) / float64(s.Comparisons)
}

// ReviewJob is a job waiting in the manual review queue.
type ReviewJob struct {
	ID        string
	Topic     string
	Slot      string
	Title     string
	Provider  string   // the best candidate's provider
	Score     *float64 // the best candidate's score
	LastError string
	UpdatedAt time.Time
}

// SkipCount counts the skips of one provider for one reason.
type SkipCount struct {
	Provider string
	Reason   string
	Count    int
}
