package chain

import (
	"context"
	"errors"
	"time"
)

// Purpose says why a call was made (calls.purpose).
type Purpose string

// Call purposes.
const (
	PurposeJob    Purpose = "job"
	PurposeShadow Purpose = "shadow"
	PurposeHealth Purpose = "health"
	// PurposePrompts is a call of `prompts test`: it is not a job's, so
	// the job figures of reports and alerts leave it out.
	PurposePrompts Purpose = "prompts"
)

// SkipReason says why a link was passed over without a call (skips.reason).
type SkipReason string

// Skip reasons.
const (
	SkipCap         SkipReason = "cap"
	SkipExhausted   SkipReason = "exhausted"
	SkipCircuitOpen SkipReason = "circuit_open"
	SkipHalted      SkipReason = "halted"
	SkipTokens      SkipReason = "tokens" // the link's daily_tokens would be crossed
	SkipBudget      SkipReason = "budget" // a money limit (link or chain, day or month) would be crossed
	// SkipTooLarge: the link answered that this job's request can never
	// fit it (recorded for the job only; later jobs call it again).
	SkipTooLarge SkipReason = "too_large"
	// SkipMisconfigured: the link is misconfigured (ProviderState.
	// Misconfigured) and neither its config changed nor a probe is due.
	SkipMisconfigured SkipReason = "misconfigured"
)

// JobStatus is a job's state (jobs.status), or what a run did with a job
// (JobReport.Status: also JobActive and JobError).
type JobStatus string

// Job statuses (jobs.status).
const (
	JobDue        JobStatus = "due"        // not yet done for its slot
	JobRunning    JobStatus = "running"    // claimed by a live run
	JobPublishing JobStatus = "publishing" // write-ahead: publication started, not confirmed
	JobPublished  JobStatus = "published"
	JobReview     JobStatus = "review"   // every answer failed the gate; best candidate kept
	JobDeferred   JobStatus = "deferred" // no provider answered; due again next run
	JobHalted     JobStatus = "halted"   // auth failure stopped the run
	JobRejected   JobStatus = "rejected" // closed by `review reject`
	// JobDayFull is not stored: a DayClaimer's answer when the day's
	// ceiling of publications is taken (published plus claims in flight).
	JobDayFull JobStatus = "day_full"
)

// ErrJobUnstorable marks a JobStore error about one job only: the database
// refuses its id or text (a NUL byte, an id past an index's limit). A run
// reports that job, raises RuleJobUnstorable and goes on with the others; any
// other claim error stops the run (the store is taken as down).
var ErrJobUnstorable = errors.New("the database cannot store this job")

// What a run reports for a job it did not work on (JobReport.Status only).
const (
	JobActive JobStatus = "active" // held by another live run
	JobError  JobStatus = "error"  // the run failed on it (store, publisher)
)

// Finished reports whether a job in status s is done for good: published,
// kept for review, or rejected.
func (s JobStatus) Finished() bool {
	return s == JobPublished || s == JobReview || s == JobRejected
}

// Call is one row of the calls table: one attempt at one provider. Text, if
// not empty, goes to the outputs table (never to calls).
type Call struct {
	Provider      string
	Model         string
	RequestID     string // the job id
	Attempt       int    // 1, 2, … across the chain and later runs
	TS            time.Time
	InputTokens   int
	OutputTokens  int
	Latency       time.Duration
	FirstToken    time.Duration
	HTTPStatus    int
	CostUSD       float64
	QualityScore  *float64 // nil = no output to score
	Outcome       Outcome
	PromptVersion string
	PreviousError string // the previous attempt's outcome/message for this job
	Truncated     bool
	Shadow        bool
	Purpose       Purpose
	Checks        []string // quality checks that cost points, stored as each quality.Check.String ("words -20 (640 of 1200 target)")
	Detail        string   // error message, scrubbed
	Text          string   // answer text (or partial text) for outputs
	Partial       bool     // Text is a partial stream
	// SecretRedacted reports that a configured secret was found in the
	// answer, partial text or error detail and replaced before storing.
	SecretRedacted bool
	// UsageSuspect says why the usage the provider reported cannot be true
	// (Response.UsageSuspect); the tokens are kept as reported, CostUSD is
	// at least the call's estimate.
	UsageSuspect string
}

// AttemptRecord is one attempt's durable rows, written in one transaction
// by Store.RecordAttempt: the call (and its text), the settlement of its
// cap reservation, and what it taught about its provider.
type AttemptRecord struct {
	Call Call
	// Cap settles the call's cap reservation; nil when it took none.
	Cap *CapSettlement
	// Learn, when not nil, updates the stored state of Call.Provider as
	// UpdateProviderState's fn does (it may run again on a busy retry).
	Learn func(*ProviderState) []Transition
}

// CapSettlement settles one cap reservation: Sent false gives the request
// back to the day's cap.
type CapSettlement struct {
	ID     int64
	Sent   bool
	Tokens int
	// OutputTokens and CostUSD are the call's real output tokens and cost
	// (the provider's own charge where known, else at the link's price).
	OutputTokens int
	CostUSD      float64
}

// SpendRequest is one call's reservation against every limit that applies
// to it, checked and taken in one store transaction (also across
// processes). A zero limit is none.
type SpendRequest struct {
	Provider string
	DayStart time.Time // the link's cap day (its cap_reset)
	Now      time.Time
	// Cap is the link's request limit for the call's purpose.
	Cap int
	// DailyTokens and DailyUSD are the link's own limits for its cap day.
	DailyTokens int
	DailyUSD    float64
	// ChainDayStart and ChainMonthStart open the UTC day and month of the
	// chain-wide limits.
	ChainDayStart, ChainMonthStart time.Time
	ChainDailyUSD, ChainMonthlyUSD float64
	// InputTokens is the prompt's estimate; MaxOutput the output ceiling
	// (max_tokens). The store estimates the output as the median of the
	// link's recent settled outputs, else MaxOutput.
	InputTokens int
	MaxOutput   int
	Price       Price
}

// SpendLimit names one of the limits a SpendRequest is checked against.
type SpendLimit string

// The limits, in the order they are checked.
const (
	LimitCap        SpendLimit = "daily_cap"
	LimitTokens     SpendLimit = "daily_tokens"
	LimitLinkUSD    SpendLimit = "daily_budget_usd"
	LimitChainDay   SpendLimit = "budget.daily_usd"
	LimitChainMonth SpendLimit = "budget.monthly_usd"
)

// Reason is the skip reason of a refusal by the limit.
func (l SpendLimit) Reason() SkipReason {
	switch l {
	case LimitCap:
		return SkipCap
	case LimitTokens:
		return SkipTokens
	}
	return SkipBudget
}

// SpendGrant is what ReserveSpend decided: the reservation id (0 when
// refused), the limit that refused ("" when granted) with its use (the
// settled use plus open estimates, before this call) and value, and the
// estimate taken.
type SpendGrant struct {
	ID        int64
	Refused   SpendLimit
	Used      float64
	Limit     float64
	EstTokens int
	EstUSD    float64
}

// Skip is one row of the skips table: a provider passed over without a call.
type Skip struct {
	TS        time.Time
	RequestID string
	Provider  string
	Reason    SkipReason
	Until     time.Time
}

// TransitionKind is the kind of a provider state change
// (provider_events.kind).
type TransitionKind string

// Transition kinds.
const (
	TransitionBreaker   TransitionKind = "breaker"   // From/To are BreakerStates
	TransitionExhausted TransitionKind = "exhausted" // From "available" or "exhausted", To "exhausted"
	// TransitionMisconfigured: From "available" To "misconfigured" (an
	// incident opens), or From "misconfigured" To "available" (a call
	// reached the provider and was not refused as misconfigured).
	TransitionMisconfigured TransitionKind = "misconfigured"
)

// Transition is a recorded provider state change (breaker, exhaustion).
type Transition struct {
	TS       time.Time
	Provider string
	Kind     TransitionKind
	From, To string
	Detail   string
}

// ProviderState is what outlives the process for one provider.
type ProviderState struct {
	ExhaustedUntil  time.Time
	ExhaustedReason string
	Breaker         Breaker
	// Misconfigured is the open misconfigured incident of the link; nil
	// when none.
	Misconfigured *Misconfig
}

// Misconfig is a link found misconfigured: it cannot work until a person
// changes something, so it is not called while its config is the one it
// was found with (ConfigHash), except one probe call once ProbeAfter has
// passed (a day after each refusal) and every health walk.
type Misconfig struct {
	Since      time.Time `json:"since"`
	Detail     string    `json:"detail"` // what the provider said (scrubbed), with its status
	Fix        string    `json:"fix"`
	ConfigHash string    `json:"config_hash"`
	ProbeAfter time.Time `json:"probe_after"`
}

// MisconfigProbeEvery is how long a misconfigured link goes without a call
// (its config unchanged) before one probe call is let through.
const MisconfigProbeEvery = 24 * time.Hour

// Owner identifies a run process holding job claims. Token is unique to
// the process (two containers with one hostname are both pid 1); Host and
// PID say where it runs, for people and for the lease fallback.
type Owner struct {
	Host  string
	PID   int
	Token string
}

// Store is the durable state chain needs. telemetry.Store implements it on
// SQLite; every method is safe for concurrent use by several processes.
type Store interface {
	// NextAttempt returns the next attempt number for a job (1 when none yet).
	NextAttempt(ctx context.Context, requestID string) (int, error)
	// RecordAttempt writes one attempt's durable rows in one transaction.
	RecordAttempt(ctx context.Context, r AttemptRecord) error
	RecordSkip(ctx context.Context, s Skip) error
	// ReserveSpend atomically checks r against the day's (and month's)
	// settled use plus the open estimates and takes the reservation when
	// every limit holds.
	ReserveSpend(ctx context.Context, r SpendRequest) (SpendGrant, error)
	// SettleCap settles a reservation: sent=false gives the request back.
	SettleCap(ctx context.Context, id int64, sent bool, tokens int) error
	ProviderState(ctx context.Context, provider string) (ProviderState, error)
	// UpdateProviderState runs fn on the stored state inside one write
	// transaction and saves the result and the transitions fn returns.
	UpdateProviderState(ctx context.Context, provider string, fn func(*ProviderState) []Transition) error
}

// JobHistory is what a job's earlier walks left that its next walk needs.
type JobHistory struct {
	NextAttempt int      // the attempt number the walk's first call takes (1 when none yet)
	TooLarge    []string // links that refused the job's request as too large
}

// JobHistorySource is implemented by stores that read a job's history in
// one query (telemetry.Store): the walk skips the TooLarge links for that
// job (SkipTooLarge) without a call, and numbers its calls from
// NextAttempt instead of asking Store.NextAttempt.
type JobHistorySource interface {
	JobHistory(ctx context.Context, jobID string) (JobHistory, error)
}

// JobRecord is one row of the jobs table.
type JobRecord struct {
	ID           string // the topic id, or <topic>/<period> for a series (BacklogJobID)
	Topic        string // topic id
	Slot         string // UTC date YYYY-MM-DD of the run that first took it
	Title        string
	Category     string
	Language     string
	Status       JobStatus
	Provider     string // link that served the published/kept answer
	Model        string
	QualityScore *float64
	Attempt      int // the attempt whose answer was published or kept
	Location     string
	PublishedAt  time.Time
	LastError    string
	UpdatedAt    time.Time
	// Payload is the exact body a job in publishing delivers to Location
	// (nil otherwise).
	Payload []byte
	// Deferrals counts the times the job was deferred (read only: the
	// store counts them as FinishJob records JobDeferred).
	Deferrals int
}

// Candidate is a stored answer of a job (for publication or review).
type Candidate struct {
	RequestID    string
	Attempt      int
	Provider     string
	Model        string
	QualityScore float64
	Text         string
	Partial      bool
}

// DayClaimer is a JobStore that can claim under a ceiling of publications
// per UTC day, atomically with the claim: ClaimJobWithin is ClaimJob that
// refuses a fresh claim (claimed=false, cur.Status JobDayFull) when the
// other jobs published within the day that starts at dayStart, plus every
// job in publishing (whatever its claim's age: it is still delivered), plus
// the running jobs claimed within lease reach ceiling. A job in publishing
// is claimed whatever the count. telemetry.Store implements it.
//
// MarkPublishingWithin is MarkPublishing that counts the same way in the
// mark's transaction and refuses with ErrDayFull when the others reach
// ceiling: a run paused past its claim's lease was not counted meanwhile.
type DayClaimer interface {
	ClaimJobWithin(ctx context.Context, j JobRecord, owner Owner, alive func(Owner) bool, lease time.Duration, now, dayStart time.Time, ceiling int) (claimed bool, cur JobRecord, err error)
	MarkPublishingWithin(ctx context.Context, j JobRecord, owner Owner, lease time.Duration, now, dayStart time.Time, ceiling int) error
}

// ErrDayFull is MarkPublishingWithin's refusal: the day's ceiling was
// reached by other jobs while this one's claim had run out.
var ErrDayFull = errors.New("posts_per_day reached by other runs while this job's claim had run out")

// DeliveryChecker is implemented by job stores whose claims another
// machine may take over while their holder still runs (telemetry.Store; see
// its lease.go): the run calls CheckDelivery right before each Deliver —
// the claim is still held, with at least the store's delivery window left —
// and bounds the delivery by the deadline it returns.
type DeliveryChecker interface {
	CheckDelivery(ctx context.Context, id string, owner Owner, lease time.Duration, now time.Time) (deadline time.Time, err error)
}

// JobStore is the durable job state the run loop needs; telemetry.Store
// implements it. Claims make concurrent runs (several processes) safe.
type JobStore interface {
	// ClaimJob inserts the job if new and claims it for owner. It returns
	// claimed=false with the current status when the job is finished
	// (published, review, rejected) or held by another owner that is alive
	// (alive(owner) true and its claim younger than lease). A claim whose owner is dead
	// or whose lease expired is taken over. A job in JobPublishing is claimed
	// too, so the caller can reconcile it.
	ClaimJob(ctx context.Context, j JobRecord, owner Owner, alive func(Owner) bool, lease time.Duration, now time.Time) (claimed bool, cur JobRecord, err error)
	// HeartbeatJob renews owner's claim on a job.
	HeartbeatJob(ctx context.Context, id string, owner Owner, now time.Time) error
	// MarkPublishing records the write-ahead state before publication — the
	// chosen attempt, the location and the exact payload — for a job that
	// owner still claims, and returns only once that record is durable
	// (fsynced), so that no crash or power cut can lose it after the side
	// effect started.
	MarkPublishing(ctx context.Context, j JobRecord, owner Owner, now time.Time) error
	// FinishJob sets the final status (published, review, deferred, halted,
	// rejected), the fields of j, and releases the claim.
	// Only owner's claim (or an unclaimed job) is finished.
	FinishJob(ctx context.Context, j JobRecord, owner Owner, now time.Time) error
	// CandidateAt returns the stored answer of one non-shadow attempt.
	CandidateAt(ctx context.Context, jobID string, attempt int) (Candidate, bool, error)
	Job(ctx context.Context, id string) (JobRecord, bool, error)
}
