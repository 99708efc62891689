package telemetry

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migration is one schema step. Versions are 1, 2, … in order; a released
// migration is never edited, only followed by a new one.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations is the schema history. SchemaVersion is its last version.
var migrations = []migration{
	{1, "initial schema", `
CREATE TABLE calls (
	id                INTEGER PRIMARY KEY,
	provider          TEXT    NOT NULL,
	model             TEXT    NOT NULL DEFAULT '',
	request_id        TEXT    NOT NULL,
	attempt           INTEGER NOT NULL,
	ts                TEXT    NOT NULL,
	input_tokens      INTEGER NOT NULL DEFAULT 0,
	output_tokens     INTEGER NOT NULL DEFAULT 0,
	latency_ms        INTEGER NOT NULL DEFAULT 0,
	first_token_ms    INTEGER NOT NULL DEFAULT 0,
	http_status       INTEGER NOT NULL DEFAULT 0,
	cost_estimate_usd REAL    NOT NULL DEFAULT 0,
	quality_score     REAL,
	outcome           TEXT    NOT NULL,
	prompt_version    TEXT    NOT NULL DEFAULT '',
	previous_error    TEXT    NOT NULL DEFAULT '',
	truncated         INTEGER NOT NULL DEFAULT 0 CHECK (truncated IN (0, 1)),
	shadow            INTEGER NOT NULL DEFAULT 0 CHECK (shadow IN (0, 1)),
	purpose           TEXT    NOT NULL DEFAULT 'job',
	checks            TEXT    NOT NULL DEFAULT '[]',
	detail            TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX calls_ts ON calls (ts);
CREATE INDEX calls_request ON calls (request_id, attempt);
CREATE INDEX calls_provider_ts ON calls (provider, ts);

-- Answer texts, one per call that produced text, with their own retention.
-- call_id ties a text to exactly one calls row (shadow attempts share the
-- job's request_id); request_id and attempt are copied for plain queries.
CREATE TABLE outputs (
	call_id    INTEGER PRIMARY KEY REFERENCES calls (id) ON DELETE CASCADE,
	request_id TEXT    NOT NULL,
	attempt    INTEGER NOT NULL,
	text       TEXT    NOT NULL,
	partial    INTEGER NOT NULL DEFAULT 0 CHECK (partial IN (0, 1)),
	created_at TEXT    NOT NULL
);
CREATE INDEX outputs_request ON outputs (request_id, attempt);
CREATE INDEX outputs_created ON outputs (created_at);

CREATE TABLE jobs (
	id            TEXT PRIMARY KEY,
	topic         TEXT    NOT NULL,
	slot          TEXT    NOT NULL,
	title         TEXT    NOT NULL DEFAULT '',
	category      TEXT    NOT NULL DEFAULT '',
	language      TEXT    NOT NULL DEFAULT '',
	status        TEXT    NOT NULL,
	provider      TEXT    NOT NULL DEFAULT '',
	model         TEXT    NOT NULL DEFAULT '',
	quality_score REAL,
	attempt       INTEGER NOT NULL DEFAULT 0,
	published_at  TEXT,
	location      TEXT    NOT NULL DEFAULT '',
	last_error    TEXT    NOT NULL DEFAULT '',
	owner_host    TEXT,
	owner_pid     INTEGER,
	claimed_at    TEXT,
	created_at    TEXT    NOT NULL,
	updated_at    TEXT    NOT NULL
);
CREATE INDEX jobs_status ON jobs (status, slot);

CREATE TABLE skips (
	id         INTEGER PRIMARY KEY,
	ts         TEXT NOT NULL,
	request_id TEXT NOT NULL DEFAULT '',
	provider   TEXT NOT NULL,
	reason     TEXT NOT NULL,
	until      TEXT
);
CREATE INDEX skips_ts ON skips (ts);
CREATE INDEX skips_provider_ts ON skips (provider, ts);

-- The alerts outbox. At most one pending (unsent) alert per key; sent rows
-- stay as history. lease_owner/lease_until keep two senders apart.
CREATE TABLE alerts (
	id          INTEGER PRIMARY KEY,
	key         TEXT    NOT NULL,
	rule        TEXT    NOT NULL DEFAULT '',
	severity    TEXT    NOT NULL DEFAULT '',
	text        TEXT    NOT NULL,
	created_at  TEXT    NOT NULL,
	sent_at     TEXT,
	attempts    INTEGER NOT NULL DEFAULT 0,
	last_error  TEXT    NOT NULL DEFAULT '',
	next_try_at TEXT    NOT NULL,
	lease_owner TEXT,
	lease_until TEXT
);
CREATE UNIQUE INDEX alerts_pending_key ON alerts (key) WHERE sent_at IS NULL;
CREATE INDEX alerts_key_sent ON alerts (key, sent_at);
CREATE INDEX alerts_pending ON alerts (next_try_at) WHERE sent_at IS NULL;

CREATE TABLE health_checks (
	id             INTEGER PRIMARY KEY,
	ts             TEXT    NOT NULL,
	provider       TEXT    NOT NULL,
	model          TEXT    NOT NULL DEFAULT '',
	ok             INTEGER NOT NULL CHECK (ok IN (0, 1)),
	http_status    INTEGER NOT NULL DEFAULT 0,
	latency_ms     INTEGER NOT NULL DEFAULT 0,
	first_token_ms INTEGER NOT NULL DEFAULT 0,
	outcome        TEXT    NOT NULL DEFAULT '',
	detail         TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX health_checks_ts ON health_checks (ts);

CREATE TABLE shadow_comparisons (
	id                 INTEGER PRIMARY KEY,
	ts                 TEXT    NOT NULL,
	request_id         TEXT    NOT NULL,
	primary_provider   TEXT    NOT NULL,
	shadow_provider    TEXT    NOT NULL,
	primary_score      REAL,
	shadow_score       REAL,
	quality_delta      REAL,
	shadow_pass        INTEGER NOT NULL DEFAULT 0 CHECK (shadow_pass IN (0, 1)),
	word_ratio         REAL,
	primary_latency_ms INTEGER NOT NULL DEFAULT 0,
	shadow_latency_ms  INTEGER NOT NULL DEFAULT 0,
	primary_cost_usd   REAL    NOT NULL DEFAULT 0,
	shadow_cost_usd    REAL    NOT NULL DEFAULT 0
);
CREATE INDEX shadow_comparisons_ts ON shadow_comparisons (ts);

CREATE TABLE provider_state (
	provider         TEXT PRIMARY KEY,
	exhausted_until  TEXT,
	exhausted_reason TEXT NOT NULL DEFAULT '',
	breaker          TEXT NOT NULL DEFAULT '{}',
	updated_at       TEXT NOT NULL
);

CREATE TABLE provider_events (
	id         INTEGER PRIMARY KEY,
	ts         TEXT NOT NULL,
	provider   TEXT NOT NULL,
	kind       TEXT NOT NULL,
	from_state TEXT NOT NULL DEFAULT '',
	to_state   TEXT NOT NULL DEFAULT '',
	detail     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX provider_events_provider_ts ON provider_events (provider, ts);

-- Daily cap reservations: one row per request taken from a provider's cap
-- for the day starting at day_start. Unsettled rows count (the call may be
-- in flight); settled rows count only when the request was sent.
CREATE TABLE cap_reservations (
	id        INTEGER PRIMARY KEY,
	provider  TEXT    NOT NULL,
	day_start TEXT    NOT NULL,
	ts        TEXT    NOT NULL,
	settled   INTEGER NOT NULL DEFAULT 0 CHECK (settled IN (0, 1)),
	sent      INTEGER NOT NULL DEFAULT 0 CHECK (sent IN (0, 1)),
	tokens    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX cap_reservations_day ON cap_reservations (provider, day_start);
`},
	{2, "at-most-once: claim tokens, publishing target", `
-- A claim belongs to one process, named by a token unique to it (host + pid
-- alone collide across PID namespaces); see owner.go.
ALTER TABLE jobs ADD COLUMN owner_token TEXT;

-- The exact bytes a job in publishing delivers to its location: written
-- durably before the side effect, so a reconciliation sends the same bytes;
-- cleared once the job is published.
ALTER TABLE jobs ADD COLUMN payload BLOB;

-- Facts about the installation, e.g. the publishing target this database
-- belongs to (publish_target), and operator notices shown once a period
-- (notice:<key>, see notices.go).
CREATE TABLE meta (
	key        TEXT PRIMARY KEY,
	value      TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
`},
	{3, "calls.secret_redacted", `
-- 1 when a configured secret was found in the call's answer, partial text
-- or error detail and replaced before it was stored.
ALTER TABLE calls ADD COLUMN secret_redacted INTEGER NOT NULL DEFAULT 0 CHECK (secret_redacted IN (0, 1));
`},
	{4, "incidents", `
-- Incidents: a condition a human must act on (the whole chain down, one
-- provider down), from its first evidence to its resolution. At most one
-- open incident per key; resolved rows stay as history. notified_at is the
-- last message (opened or reminder) queued for it, NULL while it has not
-- been announced (a provider down during a chain-down incident).
CREATE TABLE incidents (
	id           INTEGER PRIMARY KEY,
	key          TEXT    NOT NULL,
	rule         TEXT    NOT NULL,
	provider     TEXT    NOT NULL DEFAULT '',
	opened_at    TEXT    NOT NULL,
	last_seen_at TEXT    NOT NULL,
	resolved_at  TEXT,
	notified_at  TEXT,
	reminders    INTEGER NOT NULL DEFAULT 0,
	detail       TEXT    NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX incidents_open_key ON incidents (key) WHERE resolved_at IS NULL;
CREATE INDEX incidents_opened ON incidents (opened_at);
`},
	{5, "backlog: a job per topic, deferrals", `
-- How many times the job was deferred (no provider answered), for the
-- backlog's order and the topics command.
ALTER TABLE jobs ADD COLUMN deferrals INTEGER NOT NULL DEFAULT 0;

-- Before the backlog a job id was <slot>/<topic>, one job per topic per UTC
-- day. Now a topic is one job whose id is the topic id. Each topic's row
-- that stands for it (its earliest published row, else its latest row) takes
-- the topic id, with its calls, outputs, skips and shadow comparisons, so a
-- topic published before the upgrade counts as published. The other rows
-- keep their ids as history.
CREATE TEMP TABLE v1_ids AS
SELECT id AS old, topic AS new FROM (
	SELECT id, topic, ROW_NUMBER() OVER (PARTITION BY topic
		ORDER BY status = 'published' DESC, CASE WHEN status = 'published' THEN published_at END ASC, updated_at DESC) AS rn
	FROM jobs WHERE id = slot || '/' || topic)
WHERE rn = 1 AND topic NOT IN (SELECT id FROM jobs);
UPDATE calls SET request_id = (SELECT new FROM v1_ids WHERE old = calls.request_id) WHERE request_id IN (SELECT old FROM v1_ids);
UPDATE outputs SET request_id = (SELECT new FROM v1_ids WHERE old = outputs.request_id) WHERE request_id IN (SELECT old FROM v1_ids);
UPDATE skips SET request_id = (SELECT new FROM v1_ids WHERE old = skips.request_id) WHERE request_id IN (SELECT old FROM v1_ids);
UPDATE shadow_comparisons SET request_id = (SELECT new FROM v1_ids WHERE old = shadow_comparisons.request_id) WHERE request_id IN (SELECT old FROM v1_ids);
UPDATE jobs SET id = (SELECT new FROM v1_ids WHERE old = jobs.id) WHERE id IN (SELECT old FROM v1_ids);
DROP TABLE v1_ids;
`},
	{6, "budgets: token and money reservations", `
-- Each reservation carries the call's estimate (tokens, output tokens, USD)
-- taken before the call and, once settled, its real output tokens and cost
-- (tokens already holds the real input+output). Open reservations count
-- their estimate toward a limit, settled ones their real use.
ALTER TABLE cap_reservations ADD COLUMN est_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cap_reservations ADD COLUMN est_output INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cap_reservations ADD COLUMN est_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE cap_reservations ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cap_reservations ADD COLUMN usd REAL NOT NULL DEFAULT 0;
CREATE INDEX cap_reservations_ts ON cap_reservations (ts);
`},
	{7, "several workers: owners' leases, schedule slots", migration7},
	{8, "indexes for the per-run reads", migration8},
	{9, "misconfigured links, suspect usage", migration9},
	// PostgreSQL's reader role (pgMigration11); nothing to do on SQLite,
	// whose `sql` opens the file read-only.
	{11, "the role `sql` reads under", "SELECT 1"},
	{12, "running totals of the reservations", totalsSQL(false)},
}

// migration9 is the same text on both backends.
const migration9 = `
-- A link only a person can fix (chain.Misconfig as JSON, '' when none):
-- it is skipped without a call until its config changes or a daily probe
-- answers. A call whose reported usage cannot be true says why; its cost
-- is at least its estimate.
ALTER TABLE provider_state ADD COLUMN misconfigured TEXT NOT NULL DEFAULT '';
ALTER TABLE calls ADD COLUMN usage_suspect TEXT NOT NULL DEFAULT '';
`

// migration8 is the same text on both backends.
const migration8 = `
-- The alert rules after every run read the last publication, and every
-- reservation reads its provider's recent settled outputs: both were a
-- scan of all of a status's jobs or a provider's reservations, so their
-- cost grew with the database's age (a simulated year: quadratic).
CREATE INDEX jobs_published_at ON jobs (status, published_at);
CREATE INDEX cap_reservations_outputs ON cap_reservations (provider, id) WHERE settled = 1 AND sent = 1 AND output_tokens > 0;
`

// migration7 is the same text on both backends.
const migration7 = `
-- The processes that take claims (owner.go). On PostgreSQL a process is
-- alive while lease_until is in the future: it renews its lease while it
-- runs and deletes its row when it stops. On SQLite an OS lock decides and
-- the table stays empty.
CREATE TABLE owners (
	token       TEXT    PRIMARY KEY,
	host        TEXT    NOT NULL,
	pid         INTEGER NOT NULL,
	started_at  TEXT    NOT NULL,
	lease_until TEXT    NOT NULL
);

-- One scheduled run per schedule and slot (its cron time) across every
-- serve worker on the database: the first worker to insert the row runs it.
CREATE TABLE schedule_slots (
	schedule    TEXT    NOT NULL,
	slot        TEXT    NOT NULL,
	owner_host  TEXT    NOT NULL,
	owner_pid   INTEGER NOT NULL,
	owner_token TEXT    NOT NULL DEFAULT '',
	claimed_at  TEXT    NOT NULL,
	PRIMARY KEY (schedule, slot)
);
`

// pgMigrations is the schema history on PostgreSQL. It starts at version 6
// with the SQLite schema of version 6 in PostgreSQL's types (the first
// PostgreSQL release came after it), then follows the same versions as
// migrations, so one SchemaVersion names one schema on both backends.
var pgMigrations = []migration{
	{6, "baseline: the schema of version 6", pgBaseline},
	{7, "several workers: owners' leases, schedule slots", migration7},
	{8, "indexes for the per-run reads", migration8},
	{9, "misconfigured links, suspect usage", migration9},
	{11, "the role `sql` reads under", pgMigration11},
	{12, "running totals of the reservations", totalsSQL(true)},
}

// pgBaseline is the schema of migrations 1 to 6 in PostgreSQL's types:
// ids are identity columns (generated, but settable by `db copy`), REAL is
// double precision, BLOB is bytea, timestamps stay TEXT (see the package
// comment), flags stay 0/1 integers.
const pgBaseline = `
CREATE TABLE calls (
	id                BIGINT  GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	provider          TEXT    NOT NULL,
	model             TEXT    NOT NULL DEFAULT '',
	request_id        TEXT    NOT NULL,
	attempt           INTEGER NOT NULL,
	ts                TEXT    NOT NULL,
	input_tokens      INTEGER NOT NULL DEFAULT 0,
	output_tokens     INTEGER NOT NULL DEFAULT 0,
	latency_ms        INTEGER NOT NULL DEFAULT 0,
	first_token_ms    INTEGER NOT NULL DEFAULT 0,
	http_status       INTEGER NOT NULL DEFAULT 0,
	cost_estimate_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
	quality_score     DOUBLE PRECISION,
	outcome           TEXT    NOT NULL,
	prompt_version    TEXT    NOT NULL DEFAULT '',
	previous_error    TEXT    NOT NULL DEFAULT '',
	truncated         INTEGER NOT NULL DEFAULT 0 CHECK (truncated IN (0, 1)),
	shadow            INTEGER NOT NULL DEFAULT 0 CHECK (shadow IN (0, 1)),
	purpose           TEXT    NOT NULL DEFAULT 'job',
	checks            TEXT    NOT NULL DEFAULT '[]',
	detail            TEXT    NOT NULL DEFAULT '',
	secret_redacted   INTEGER NOT NULL DEFAULT 0 CHECK (secret_redacted IN (0, 1))
);
CREATE INDEX calls_ts ON calls (ts);
CREATE INDEX calls_request ON calls (request_id, attempt);
CREATE INDEX calls_provider_ts ON calls (provider, ts);

CREATE TABLE outputs (
	call_id    BIGINT  PRIMARY KEY REFERENCES calls (id) ON DELETE CASCADE,
	request_id TEXT    NOT NULL,
	attempt    INTEGER NOT NULL,
	text       TEXT    NOT NULL,
	partial    INTEGER NOT NULL DEFAULT 0 CHECK (partial IN (0, 1)),
	created_at TEXT    NOT NULL
);
CREATE INDEX outputs_request ON outputs (request_id, attempt);
CREATE INDEX outputs_created ON outputs (created_at);

CREATE TABLE jobs (
	id            TEXT PRIMARY KEY,
	topic         TEXT    NOT NULL,
	slot          TEXT    NOT NULL,
	title         TEXT    NOT NULL DEFAULT '',
	category      TEXT    NOT NULL DEFAULT '',
	language      TEXT    NOT NULL DEFAULT '',
	status        TEXT    NOT NULL,
	provider      TEXT    NOT NULL DEFAULT '',
	model         TEXT    NOT NULL DEFAULT '',
	quality_score DOUBLE PRECISION,
	attempt       INTEGER NOT NULL DEFAULT 0,
	published_at  TEXT,
	location      TEXT    NOT NULL DEFAULT '',
	last_error    TEXT    NOT NULL DEFAULT '',
	owner_host    TEXT,
	owner_pid     INTEGER,
	claimed_at    TEXT,
	created_at    TEXT    NOT NULL,
	updated_at    TEXT    NOT NULL,
	owner_token   TEXT,
	payload       BYTEA,
	deferrals     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX jobs_status ON jobs (status, slot);

CREATE TABLE skips (
	id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	ts         TEXT NOT NULL,
	request_id TEXT NOT NULL DEFAULT '',
	provider   TEXT NOT NULL,
	reason     TEXT NOT NULL,
	until      TEXT
);
CREATE INDEX skips_ts ON skips (ts);
CREATE INDEX skips_provider_ts ON skips (provider, ts);

CREATE TABLE alerts (
	id          BIGINT  GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	key         TEXT    NOT NULL,
	rule        TEXT    NOT NULL DEFAULT '',
	severity    TEXT    NOT NULL DEFAULT '',
	text        TEXT    NOT NULL,
	created_at  TEXT    NOT NULL,
	sent_at     TEXT,
	attempts    INTEGER NOT NULL DEFAULT 0,
	last_error  TEXT    NOT NULL DEFAULT '',
	next_try_at TEXT    NOT NULL,
	lease_owner TEXT,
	lease_until TEXT
);
CREATE UNIQUE INDEX alerts_pending_key ON alerts (key) WHERE sent_at IS NULL;
CREATE INDEX alerts_key_sent ON alerts (key, sent_at);
CREATE INDEX alerts_pending ON alerts (next_try_at) WHERE sent_at IS NULL;

CREATE TABLE health_checks (
	id             BIGINT  GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	ts             TEXT    NOT NULL,
	provider       TEXT    NOT NULL,
	model          TEXT    NOT NULL DEFAULT '',
	ok             INTEGER NOT NULL CHECK (ok IN (0, 1)),
	http_status    INTEGER NOT NULL DEFAULT 0,
	latency_ms     INTEGER NOT NULL DEFAULT 0,
	first_token_ms INTEGER NOT NULL DEFAULT 0,
	outcome        TEXT    NOT NULL DEFAULT '',
	detail         TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX health_checks_ts ON health_checks (ts);

CREATE TABLE shadow_comparisons (
	id                 BIGINT  GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	ts                 TEXT    NOT NULL,
	request_id         TEXT    NOT NULL,
	primary_provider   TEXT    NOT NULL,
	shadow_provider    TEXT    NOT NULL,
	primary_score      DOUBLE PRECISION,
	shadow_score       DOUBLE PRECISION,
	quality_delta      DOUBLE PRECISION,
	shadow_pass        INTEGER NOT NULL DEFAULT 0 CHECK (shadow_pass IN (0, 1)),
	word_ratio         DOUBLE PRECISION,
	primary_latency_ms INTEGER NOT NULL DEFAULT 0,
	shadow_latency_ms  INTEGER NOT NULL DEFAULT 0,
	primary_cost_usd   DOUBLE PRECISION NOT NULL DEFAULT 0,
	shadow_cost_usd    DOUBLE PRECISION NOT NULL DEFAULT 0
);
CREATE INDEX shadow_comparisons_ts ON shadow_comparisons (ts);

CREATE TABLE provider_state (
	provider         TEXT PRIMARY KEY,
	exhausted_until  TEXT,
	exhausted_reason TEXT NOT NULL DEFAULT '',
	breaker          TEXT NOT NULL DEFAULT '{}',
	updated_at       TEXT NOT NULL
);

CREATE TABLE provider_events (
	id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	ts         TEXT NOT NULL,
	provider   TEXT NOT NULL,
	kind       TEXT NOT NULL,
	from_state TEXT NOT NULL DEFAULT '',
	to_state   TEXT NOT NULL DEFAULT '',
	detail     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX provider_events_provider_ts ON provider_events (provider, ts);

CREATE TABLE cap_reservations (
	id            BIGINT  GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	provider      TEXT    NOT NULL,
	day_start     TEXT    NOT NULL,
	ts            TEXT    NOT NULL,
	settled       INTEGER NOT NULL DEFAULT 0 CHECK (settled IN (0, 1)),
	sent          INTEGER NOT NULL DEFAULT 0 CHECK (sent IN (0, 1)),
	tokens        INTEGER NOT NULL DEFAULT 0,
	est_tokens    INTEGER NOT NULL DEFAULT 0,
	est_output    INTEGER NOT NULL DEFAULT 0,
	est_usd       DOUBLE PRECISION NOT NULL DEFAULT 0,
	output_tokens INTEGER NOT NULL DEFAULT 0,
	usd           DOUBLE PRECISION NOT NULL DEFAULT 0
);
CREATE INDEX cap_reservations_day ON cap_reservations (provider, day_start);
CREATE INDEX cap_reservations_ts ON cap_reservations (ts);

CREATE TABLE meta (
	key        TEXT PRIMARY KEY,
	value      TEXT NOT NULL,
	updated_at TEXT NOT NULL
);

CREATE TABLE incidents (
	id           BIGINT  GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	key          TEXT    NOT NULL,
	rule         TEXT    NOT NULL,
	provider     TEXT    NOT NULL DEFAULT '',
	opened_at    TEXT    NOT NULL,
	last_seen_at TEXT    NOT NULL,
	resolved_at  TEXT,
	notified_at  TEXT,
	reminders    INTEGER NOT NULL DEFAULT 0,
	detail       TEXT    NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX incidents_open_key ON incidents (key) WHERE resolved_at IS NULL;
CREATE INDEX incidents_opened ON incidents (opened_at);
`

// SchemaVersion is the newest schema this binary knows.
var SchemaVersion = migrations[len(migrations)-1].version

// versionError is a database whose schema is newer than this binary.
type versionError struct {
	path        string
	have, known int
}

func (e *versionError) Error() string {
	return fmt.Sprintf("database %s has schema version %d but this contentpipe knows only up to %d: upgrade contentpipe, or point `database:` at another file",
		e.path, e.have, e.known)
}

// migrate applies every pending migration, each in its own IMMEDIATE
// transaction that re-checks whether another process applied it meanwhile.
func (s *Store) migrate(ctx context.Context) error { return s.d.migrate(s, ctx) }

func (s *Store) migrateSQLite(ctx context.Context) error {
	// schema_migrations is created with the first migration, in its
	// transaction: a migration that fails on a database holding another
	// application's tables leaves that database as it was.
	var have, tables int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").Scan(&tables); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if tables > 0 {
		if err := s.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&have); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
	}
	if have > SchemaVersion {
		return &versionError{path: s.path, have: have, known: SchemaVersion}
	}
	for _, m := range migrations {
		if m.version <= have {
			continue
		}
		err := s.write(ctx, fmt.Sprintf("migration %d (%s)", m.version, m.name), func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, createSchemaMigrations); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations WHERE version = ?", m.version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil // another process was first
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
				m.version, m.name, FormatTime(time.Now()))
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// createSchemaMigrations creates the schema history when it is missing.
const createSchemaMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at TEXT NOT NULL
)`

// pgMigrationLock is the key of the transaction-level advisory lock that
// keeps two processes migrating one PostgreSQL database apart.
const pgMigrationLock = 0x636f6e74 // "cont"

// migratePG applies pgMigrations. Each step runs in a READ COMMITTED
// transaction that first takes pgMigrationLock, so the re-check of
// schema_migrations after the lock sees what another process committed
// meanwhile (a SERIALIZABLE snapshot would predate the wait).
func (s *Store) migratePG(ctx context.Context) error {
	step := func(what string, fn func(tx *sql.Tx, have int) error) error {
		tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		defer tx.Rollback() //nolint:errcheck
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", pgMigrationLock); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		// Created in the transaction of the migration that needs it: one
		// that fails (another application's tables) leaves nothing behind.
		if _, err := tx.ExecContext(ctx, createSchemaMigrations); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		var have int
		if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&have); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if have > SchemaVersion {
			return &versionError{path: s.path, have: have, known: SchemaVersion}
		}
		if err := fn(tx, have); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return tx.Commit()
	}
	for _, m := range pgMigrations {
		err := step(fmt.Sprintf("migration %d (%s)", m.version, m.name), func(tx *sql.Tx, have int) error {
			if m.version <= have {
				return nil // applied already, maybe by another process
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
				m.version, m.name, FormatTime(time.Now()))
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
