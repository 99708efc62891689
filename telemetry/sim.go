package telemetry

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// OpenScratch opens a throwaway database for `contentpipe simulate` on the
// file path, which must not exist yet: the same schema, statements and code
// paths as Open, tuned for a simulated year of hundreds of thousands of
// short transactions whose durability does not matter (a crash loses a
// what-if run, never production data). One connection holds the file
// locked for the process, the rollback journal in memory, no fsync, and a
// bounded page cache, so memory does not grow with the simulated days (the
// pages live in the file, the operating system caches it). After the
// schema, every transaction of the store runs as a savepoint inside an
// outer transaction that commits every scratchBatch of them (scratchConn):
// a store transaction's commit or rollback is the savepoint's, and a page
// written by many of them is written to the file once per batch. Close
// commits, so the file is a normal SQLite database with the production schema (for contentpipe sql and
// --advise). Never use it for the production database.
func OpenScratch(path string) (*Store, error) {
	if _, err := os.Stat(path); err == nil {
		return nil, fmt.Errorf("open scratch database %s: the file exists (remove it, or pick another directory)", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create scratch database directory: %w", err)
	}
	dsn, err := buildDSN(path, false)
	if err != nil {
		return nil, err
	}
	dsn = strings.NewReplacer("_journal_mode=WAL", "_journal_mode=MEMORY", "_synchronous=NORMAL", "_synchronous=OFF").Replace(dsn) +
		fmt.Sprintf("&_locking_mode=EXCLUSIVE&_cache_size=-%d", scratchCacheKiB)
	s := &Store{db: sql.OpenDB(scratchConnector{connector{dsn: dsn, drv: &sqlite3.SQLiteDriver{}}}), path: path, d: sqliteDialect, scratch: true}
	// One connection that never closes: it holds the lock and the outer
	// transaction.
	s.db.SetMaxOpenConns(1)
	s.db.SetMaxIdleConns(1)
	s.db.SetConnMaxLifetime(0)
	s.db.SetConnMaxIdleTime(0)
	ctx := context.Background()
	fail := func(err error) (*Store, error) {
		s.db.Close()
		return nil, fmt.Errorf("open scratch database %s: %w", path, err)
	}
	if err := s.db.PingContext(ctx); err != nil {
		return fail(err)
	}
	if err := s.migrate(ctx); err != nil {
		return fail(err)
	}
	if err := s.scratchRaw(ctx, (*scratchConn).startBatch); err != nil {
		return fail(err)
	}
	return s, nil
}

// scratchCacheKiB is each scratch database's page cache: four scenarios'
// caches are part of a simulated year's memory (the pages they miss are
// read from the operating system's cache of the file).
const scratchCacheKiB = 16 << 10

// scratchBatch is how many store transactions one outer transaction of a
// scratch database holds.
const scratchBatch = 512

// closeScratch commits the outer transaction and closes the file.
func (s *Store) closeScratch() error {
	ctx := context.Background()
	err := s.scratchRaw(ctx, (*scratchConn).endBatch)
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write scratch database %s: %w", s.path, err)
	}
	return nil
}

// scratchRaw runs fn on the scratch database's one connection.
func (s *Store) scratchRaw(ctx context.Context, fn func(*scratchConn) error) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error { return fn(dc.(*scratchConn)) })
}

// scratchConnector opens scratchConns.
type scratchConnector struct{ connector }

func (c scratchConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc := &scratchConn{SQLiteConn: dc.(*sqlite3.SQLiteConn)}
	// Each savepoint keeps the pages it changes in a statement journal:
	// in memory, not in a temporary file.
	if err := sc.exec("PRAGMA temp_store = MEMORY"); err != nil {
		sc.Close()
		return nil, err
	}
	return sc, nil
}

// scratchConn is a scratch database's connection. Once startBatch ran, it
// holds an outer transaction, and a transaction begun on it is a savepoint
// in it; every scratchBatch released savepoints the outer transaction
// commits and a new one begins.
type scratchConn struct {
	*sqlite3.SQLiteConn
	batching bool
	released int
}

func (c *scratchConn) exec(qs ...string) error {
	for _, q := range qs {
		if _, err := c.SQLiteConn.ExecContext(context.Background(), q, nil); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

func (c *scratchConn) startBatch() error {
	if err := c.exec("BEGIN IMMEDIATE"); err != nil {
		return err
	}
	c.batching, c.released = true, 0
	return nil
}

// tempToFile commits the outer transaction, ends batching and lets
// temporary storage (sorts, statement journals) spill to files.
func (c *scratchConn) tempToFile() error {
	if err := c.endBatch(); err != nil {
		return err
	}
	return c.exec("PRAGMA temp_store = FILE")
}

// endBatch commits the outer transaction.
func (c *scratchConn) endBatch() error {
	if !c.batching {
		return nil
	}
	c.batching = false
	return c.exec("COMMIT")
}

// ExecContext is the driver's, but for the synchronous level a durable
// write of the store sets around its transaction: SQLite refuses it inside
// the outer transaction, and a scratch file never syncs.
func (c *scratchConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	if c.batching && strings.HasPrefix(q, "PRAGMA synchronous") {
		return driver.RowsAffected(0), nil
	}
	return c.SQLiteConn.ExecContext(ctx, q, args)
}

func (c *scratchConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *scratchConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if !c.batching {
		return c.SQLiteConn.BeginTx(ctx, opts)
	}
	if err := c.exec("SAVEPOINT scratch_tx"); err != nil {
		return nil, err
	}
	return scratchTx{c}, nil
}

// scratchTx is a store transaction on a batching scratchConn.
type scratchTx struct{ c *scratchConn }

func (t scratchTx) Commit() error {
	if err := t.c.exec("RELEASE scratch_tx"); err != nil {
		return err
	}
	if t.c.released++; t.c.released < scratchBatch {
		return nil
	}
	if err := t.c.endBatch(); err != nil {
		return err
	}
	return t.c.startBatch()
}

func (t scratchTx) Rollback() error {
	return t.c.exec("ROLLBACK TO scratch_tx", "RELEASE scratch_tx")
}

// JobTotals are the whole-database figures of the jobs table, as
// `contentpipe simulate` reads them back from a scenario's database.
type JobTotals struct {
	Jobs               int     // jobs rows
	Published          int     // jobs published, on any day
	PublishedOnSlotDay int     // jobs published on the UTC day of their slot
	PublishedFallback  int     // jobs published by a provider other than the first link
	MeanQuality        float64 // mean quality score of the published jobs; 0 when none
}

// JobTotals returns the jobs table's totals; firstLink names the chain's
// first link, whose publications are not fallbacks.
func (s *Store) JobTotals(ctx context.Context, firstLink string) (JobTotals, error) {
	var t JobTotals
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*),
		COALESCE(SUM(CASE WHEN status = 'published' AND substr(published_at, 1, 10) = slot THEN 1 ELSE 0 END), 0),
		COALESCE(AVG(CASE WHEN status = 'published' THEN quality_score END), 0),
		COALESCE(SUM(CASE WHEN status = 'published' AND provider <> ? THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN status = 'published' THEN 1 ELSE 0 END), 0)
		FROM jobs`, firstLink).Scan(&t.Jobs, &t.PublishedOnSlotDay, &t.MeanQuality, &t.PublishedFallback, &t.Published)
	if err != nil {
		return JobTotals{}, fmt.Errorf("job totals: %w", s.queryErr(err))
	}
	return t, nil
}

// JobCallTotals are the whole-database figures of the job calls (purpose
// job; shadow and health calls are not counted).
type JobCallTotals struct {
	Calls     int
	CostUSD   float64 // estimated cost of every job call
	WastedUSD float64 // the part of CostUSD whose outcome was not ok
}

// JobCallTotals returns the totals of every job call.
func (s *Store) JobCallTotals(ctx context.Context) (JobCallTotals, error) {
	var t JobCallTotals
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(cost_estimate_usd), 0),
		COALESCE(SUM(CASE WHEN outcome <> 'ok' THEN cost_estimate_usd ELSE 0 END), 0)
		FROM calls WHERE purpose = 'job'`).Scan(&t.Calls, &t.CostUSD, &t.WastedUSD)
	if err != nil {
		return JobCallTotals{}, fmt.Errorf("job call totals: %w", s.queryErr(err))
	}
	return t, nil
}

// PublishSeconds returns, for every published job, the seconds from its
// first call or skip to its publication, in no particular order.
func (s *Store) PublishSeconds(ctx context.Context) ([]float64, error) {
	if s.scratch {
		// The grouping sorts every call and skip of the database: in a
		// scratch connection's temporary memory a simulated year of them
		// took over 100 MB. The batch commits (later writes are plain
		// transactions) so that the sort may spill to a temporary file.
		if err := s.scratchRaw(ctx, (*scratchConn).tempToFile); err != nil {
			return nil, fmt.Errorf("publish seconds: %w", err)
		}
	}
	var out []float64
	err := s.each(ctx, `SELECT `+s.d.secondsBetween("f.first", "j.published_at")+`
		FROM jobs j JOIN (
			SELECT request_id, MIN(ts) AS first FROM (
				SELECT request_id, ts FROM calls UNION ALL SELECT request_id, ts FROM skips) AS e
			GROUP BY request_id) f ON f.request_id = j.id
		WHERE j.status = 'published'`, nil, func(rs *sql.Rows) error {
		var v sql.NullFloat64
		if err := rs.Scan(&v); err != nil {
			return err
		}
		out = append(out, v.Float64)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("publish seconds: %w", s.queryErr(err))
	}
	return out, nil
}

// ProviderEvent is one thing the history says about a provider at one
// time: a job or health call and its outcome, or a skip.
type ProviderEvent struct {
	Provider string
	TS       time.Time
	Outcome  string // calls.outcome, or "skip:" + skips.reason
}

// ProviderEvents returns every job and health call and every skip, in no
// particular order. Rows whose timestamp does not parse are left out.
func (s *Store) ProviderEvents(ctx context.Context) ([]ProviderEvent, error) {
	var out []ProviderEvent
	err := s.each(ctx, `SELECT provider, ts, outcome FROM calls WHERE purpose IN ('job', 'health')
		UNION ALL SELECT provider, ts, 'skip:' || reason FROM skips`, nil, func(rs *sql.Rows) error {
		var e ProviderEvent
		var ts string
		if err := rs.Scan(&e.Provider, &ts, &e.Outcome); err != nil {
			return err
		}
		t, err := ParseTime(ts)
		if err != nil || ts == "" {
			return nil
		}
		e.TS = t
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("provider events: %w", s.queryErr(err))
	}
	return out, nil
}

// AlertCounts returns how many alerts the outbox holds, by severity
// ("critical", "warning", "info"), sent or not: what a run or a simulation
// raised.
func (s *Store) AlertCounts(ctx context.Context) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT severity, COUNT(*) FROM alerts GROUP BY severity")
	if err != nil {
		return nil, fmt.Errorf("count alerts: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var sev string
		var n int
		if err := rows.Scan(&sev, &n); err != nil {
			return nil, fmt.Errorf("count alerts: %w", err)
		}
		out[sev] = n
	}
	return out, rows.Err()
}

// FirstAlertSince returns the time of the first alert whose key starts with
// prefix raised at or after since (the silent-decay flag the simulator
// waits for: prefix "trend:quality:"); ok is false when there is none.
func (s *Store) FirstAlertSince(ctx context.Context, prefix string, since time.Time) (at time.Time, ok bool, err error) {
	var ts sql.NullString
	err = s.db.QueryRowContext(ctx, `SELECT MIN(created_at) FROM alerts WHERE substr(key, 1, ?) = ? AND created_at >= ?`,
		utf8.RuneCountInString(prefix), prefix, FormatTime(since)).Scan(&ts)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("first alert %s*: %w", prefix, s.queryErr(err))
	}
	if !ts.Valid || ts.String == "" {
		return time.Time{}, false, nil
	}
	t, err := ParseTime(ts.String)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("first alert %s*: %w", prefix, err)
	}
	return t, true, nil
}

// CallSpendUSD returns the estimated cost of every call (job, shadow and
// health): what a budget counts.
func (s *Store) CallSpendUSD(ctx context.Context) (float64, error) {
	var v float64
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(cost_estimate_usd), 0) FROM calls`).Scan(&v); err != nil {
		return 0, fmt.Errorf("call spend: %w", s.queryErr(err))
	}
	return v, nil
}
