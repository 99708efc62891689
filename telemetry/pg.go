package telemetry

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// Backend names, as (*Store).Backend returns them.
const (
	BackendSQLite   = "sqlite"
	BackendPostgres = "postgres"
)

// pgRetries bounds how often a PostgreSQL write transaction that failed with
// a serialization failure or a deadlock is run again. Such failures are the
// normal answer of SERIALIZABLE to two workers that decided on the same rows
// at once: one commits, the other runs fn again on the new state.
const pgRetries = 200

// pgIdleInTx is the server's idle_in_transaction_session_timeout for the
// store's connections unless the URL sets its own (see openPostgres).
const pgIdleInTx = "15s"

// pgConnectTimeout bounds the connection to the server when the URL names
// no connect_timeout.
const pgConnectTimeout = 10 * time.Second

// scrubbed is an error whose text had a password removed; errors.As still
// finds the causes (e.g. *pgconn.PgError).
type scrubbed struct {
	msg string
	err error
}

func (e scrubbed) Error() string { return e.msg }
func (e scrubbed) Unwrap() error { return e.err }

// openPostgres opens the PostgreSQL database at rawURL through pgx's
// database/sql driver. A read-only store's connections run with
// default_transaction_read_only=on, so the server refuses every write.
func openPostgres(rawURL string, readOnly bool) (*Store, error) {
	name := RedactURL(rawURL)
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("database URL %s: %v (the form is postgres://USER:PASSWORD@HOST:5432/DATABASE?sslmode=disable)", name, scrub(err, rawURL))
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = pgConnectTimeout
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "contentpipe"
	}
	// Every commit is durable when it returns (see tryWrite); a server or
	// role default of off would make the marks of MarkPublishing undurable.
	cfg.RuntimeParams["synchronous_commit"] = "on"
	// A worker paused (SIGSTOP, a frozen VM) inside a transaction holds its
	// row and advisory locks, and every other worker's reservation waits
	// on them; no transaction of the store waits on its client for long, so
	// the server ends one left idle this long and frees the locks. The
	// paused worker finds its transaction gone when it resumes.
	if _, ok := cfg.RuntimeParams["idle_in_transaction_session_timeout"]; !ok {
		cfg.RuntimeParams["idle_in_transaction_session_timeout"] = pgIdleInTx
	}
	if readOnly {
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
	}
	s := &Store{
		db:       sql.OpenDB(pgConnector{base: stdlib.GetConnector(*cfg)}),
		path:     name,
		d:        postgresDialect,
		readOnly: readOnly,
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgConnectTimeout+5*time.Second)
	defer cancel()
	if err := s.db.PingContext(ctx); err != nil {
		s.db.Close()
		hint := fmt.Sprintf("is the server running and the URL right? `psql '%s' -c 'SELECT 1'` tells", name)
		switch pgCode(err) {
		case "3D000": // invalid_catalog_name
			hint = fmt.Sprintf("create it first: `createdb -h %s -U %s %s`, or CREATE DATABASE %s as a superuser", cfg.Host, cfg.User, cfg.Database, cfg.Database)
		case "28P01", "28000": // invalid_password, invalid_authorization_specification
			hint = "check the user and password in the URL, and pg_hba.conf on the server"
		}
		return nil, fmt.Errorf("open database %s: %v (%s)", name, scrub(err, rawURL), hint)
	}
	if readOnly {
		var n int
		if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil {
			s.db.Close()
			if pgCode(err) == "42501" { // insufficient_privilege
				return nil, fmt.Errorf("database %s: the login %s may not read the contentpipe tables (%v): as a superuser, run in the database: GRANT %s TO %s",
					name, cfg.User, scrub(err, rawURL), PGReaderRole, pgIdent(cfg.User))
			}
			return nil, fmt.Errorf("database %s has no contentpipe schema (%v): run `contentpipe run` on it first, or point `database:` at the right database",
				name, scrub(err, rawURL))
		}
		return s, nil
	}
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		var ve *versionError
		if errors.As(err, &ve) {
			return nil, err
		}
		return nil, fmt.Errorf("open database %s: %w", name, scrub(err, rawURL))
	}
	return s, nil
}

// pgCode is the SQLSTATE of a PostgreSQL error ("" for any other error).
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// isPGRetry reports whether err is PostgreSQL refusing a transaction that
// may simply be run again: serialization_failure (40001) or
// deadlock_detected (40P01).
func isPGRetry(err error) bool {
	c := pgCode(err)
	return c == "40001" || c == "40P01"
}

// pgConnector wraps pgx's connector so that the package's SQL, written with
// '?' placeholders as SQLite takes them, runs on PostgreSQL unchanged: each
// statement's '?' become $1, $2, … (see rebind). An INSERT that needs the
// id it generated says RETURNING id and runs through dialect.insertID.
type pgConnector struct{ base driver.Connector }

func (c pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &pgConn{Conn: cn.(*stdlib.Conn)}, nil
}

func (c pgConnector) Driver() driver.Driver { return c.base.Driver() }

// pgConn is one rebinding connection; see pgConnector.
type pgConn struct{ *stdlib.Conn }

func (c *pgConn) Prepare(query string) (driver.Stmt, error) {
	return c.Conn.Prepare(rebind(query))
}

func (c *pgConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.PrepareContext(ctx, rebind(query))
}

func (c *pgConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if len(args) > 0 {
		query = rebind(query)
	}
	return c.Conn.ExecContext(ctx, query, args)
}

func (c *pgConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if len(args) > 0 {
		query = rebind(query)
	}
	return c.Conn.QueryContext(ctx, query, args)
}

// identityTables are the tables whose id column is generated (an identity
// column on PostgreSQL, the rowid alias on SQLite): `db copy` sets their
// sequences past the ids it copied.
var identityTables = map[string]bool{
	"calls": true, "skips": true, "alerts": true, "health_checks": true, "shadow_comparisons": true,
	"provider_events": true, "cap_reservations": true, "incidents": true,
}

// rebind turns the '?' placeholders of query into PostgreSQL's $1, $2, …,
// leaving alone a '?' inside a string literal, a quoted identifier, a
// dollar-quoted string or a comment.
func rebind(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		ch := query[i]
		switch {
		case ch == '\'' || ch == '"':
			j := i + 1
			for j < len(query) {
				if query[j] == ch {
					if j+1 < len(query) && query[j+1] == ch { // doubled quote
						j += 2
						continue
					}
					break
				}
				j++
			}
			end := min(j+1, len(query))
			b.WriteString(query[i:end])
			i = end - 1
		case ch == '-' && i+1 < len(query) && query[i+1] == '-':
			j := strings.IndexByte(query[i:], '\n')
			if j < 0 {
				j = len(query) - i - 1
			}
			b.WriteString(query[i : i+j+1])
			i += j
		case ch == '/' && i+1 < len(query) && query[i+1] == '*':
			j := strings.Index(query[i+2:], "*/")
			end := len(query)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			b.WriteString(query[i:end])
			i = end - 1
		case ch == '$':
			// A dollar quote $tag$ … $tag$ (tag empty or an identifier).
			j := i + 1
			for j < len(query) && (query[j] == '_' || isAlnum(query[j])) {
				j++
			}
			if j < len(query) && query[j] == '$' && (j == i+1 || !isDigit(query[i+1])) {
				tag := query[i : j+1]
				k := strings.Index(query[j+1:], tag)
				end := len(query)
				if k >= 0 {
					end = j + 1 + k + len(tag)
				}
				b.WriteString(query[i:end])
				i = end - 1
				continue
			}
			b.WriteByte(ch)
		case ch == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlnum(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
