package telemetry

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
)

// PGReaderRole is the PostgreSQL role `contentpipe sql` runs its queries
// under (SET ROLE): it may log in nowhere and only read the tables.
// Migration 11 creates it when the migrating user may create roles, grants
// it SELECT on every table of the schema (and on those later migrations
// create) and makes the migrating user a member.
const PGReaderRole = "contentpipe_reader"

// pgMigration11 creates PGReaderRole. Roles are the server's, not one
// database's: the role may exist already (another database, another
// process at the same moment). A user who may not create roles or grant
// leaves the schema migrated all the same; `sql` then says what to run.
const pgMigration11 = `
DO $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'contentpipe_reader') THEN
		BEGIN
			CREATE ROLE contentpipe_reader NOLOGIN;
		EXCEPTION
			WHEN duplicate_object OR unique_violation THEN NULL;
			WHEN insufficient_privilege THEN
				RAISE NOTICE 'contentpipe: cannot create the role contentpipe_reader; contentpipe sql says what to run';
				RETURN;
		END;
	END IF;
	BEGIN
		EXECUTE format('GRANT USAGE ON SCHEMA %I TO contentpipe_reader', current_schema());
		EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO contentpipe_reader', current_schema());
		EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT ON TABLES TO contentpipe_reader', current_schema());
	EXCEPTION
		WHEN insufficient_privilege OR invalid_grant_operation THEN
			RAISE NOTICE 'contentpipe: cannot grant to contentpipe_reader; contentpipe sql says what to run';
	END;
	BEGIN
		GRANT contentpipe_reader TO CURRENT_USER;
	EXCEPTION
		WHEN insufficient_privilege OR invalid_grant_operation THEN
			RAISE NOTICE 'contentpipe: cannot join contentpipe_reader; contentpipe sql says what to run';
	END;
END
$$;
`

// pgRiskyRoles are the predefined roles whose rights go beyond reading
// the tables: writing every table, running programs or reading and writing
// files on the server, signalling other sessions. A name the server does
// not have (an older release) is skipped.
var pgRiskyRoles = []string{
	"pg_write_all_data", "pg_execute_server_program", "pg_read_server_files", "pg_write_server_files",
	"pg_signal_backend", "pg_signal_autovacuum_worker", "pg_checkpoint", "pg_maintain", "pg_create_subscription",
}

// pgEscapeRE finds what would let a query leave the role it runs under or
// run SQL text of its own beyond a single read: setting the role or the
// session's user (set_config, which a superuser's session may always call
// back), functions that run a query given as text, and Unicode-escaped
// identifiers that would hide those names.
var pgEscapeRE = regexp.MustCompile(`(?i)\b(set_config|session_authorization|query_to_xml\w*|query_to_xmlschema|ts_stat|ts_rewrite|dblink\w*)\b|\bu&["']`)

// pgFirstWord is the first word of a statement, after comments and
// parentheses.
var pgFirstWord = regexp.MustCompile(`(?is)^(?:\s|--[^\n]*\n?|/\*.*?\*/|\()*([a-z]+)`)

// pgCommands are the server's commands other than the reads (SELECT,
// WITH, VALUES, TABLE, EXPLAIN, SHOW): COPY, DO, SET, RESET, CALL, every
// write…, all refused. A first word that is none of the server's goes to
// it, which answers a syntax error.
var pgCommands = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`abort alter analyze begin call checkpoint close cluster comment commit copy create
		deallocate declare delete discard do drop end execute fetch grant import insert listen load lock merge move notify
		prepare reassign refresh reindex release reset revoke rollback savepoint security set start truncate unlisten update vacuum`) {
		pgCommands[w] = true
	}
}

// enterReader makes tx (a READ ONLY transaction of a read-only store) run
// as PGReaderRole and checks that the role it runs as can do nothing but
// read: no superuser, no predefined role of pgRiskyRoles, no write right on
// any table. q is refused when it would leave the role (pgEscapeRE) or is
// one of the server's commands that is not a read (pgCommands). Every
// refusal says what to change.
func enterReader(ctx context.Context, tx *sql.Tx, q string) error {
	if m := pgFirstWord.FindStringSubmatch(q); m != nil && pgCommands[strings.ToLower(m[1])] {
		return fmt.Errorf("contentpipe sql runs only queries that read (SELECT, WITH, VALUES, TABLE, EXPLAIN, SHOW): the database is opened read-only and %s is refused; use psql as the database's owner for anything else", strings.ToUpper(m[1]))
	}
	if m := pgEscapeRE.FindString(q); m != "" {
		return fmt.Errorf("contentpipe sql refuses %q on PostgreSQL: it could leave the read-only role %s the query runs under; query the tables directly, or use psql as the database's owner", m, PGReaderRole)
	}
	var login string
	var exists, member bool
	err := tx.QueryRowContext(ctx, `SELECT session_user::text,
	EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1),
	EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1 AND pg_has_role(session_user, oid, 'MEMBER'))`, PGReaderRole).Scan(&login, &exists, &member)
	if err != nil {
		return fmt.Errorf("query: read the session's role: %w", err)
	}
	grant := fmt.Sprintf("GRANT USAGE ON SCHEMA public TO %[1]s; GRANT SELECT ON ALL TABLES IN SCHEMA public TO %[1]s; GRANT %[1]s TO %[2]s", PGReaderRole, pgIdent(login))
	switch {
	case !exists:
		return fmt.Errorf("the role %s that contentpipe sql reads under does not exist (the user who migrated the database may not create roles): as a superuser, run in the database: CREATE ROLE %s NOLOGIN; %s", PGReaderRole, PGReaderRole, grant)
	case !member:
		return fmt.Errorf("the login %s is not a member of the role %s that contentpipe sql reads under: as a superuser, run in the database: %s", login, PGReaderRole, grant)
	}
	if _, err := tx.ExecContext(ctx, "SET LOCAL ROLE "+PGReaderRole); err != nil {
		return fmt.Errorf("query: SET ROLE %s: %w (as a superuser: %s)", PGReaderRole, err, grant)
	}
	return checkReader(ctx, tx)
}

// checkReader refuses the role tx runs as when it can do more than read.
func checkReader(ctx context.Context, tx *sql.Tx) error {
	var role string
	var super, createRole, createDB bool
	var risky, writable sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT r.rolname::text, r.rolsuper, r.rolcreaterole, r.rolcreatedb,
	(SELECT string_agg(p.rolname, ', ' ORDER BY p.rolname) FROM pg_roles p
	  WHERE p.rolname = ANY($1) AND pg_has_role(current_user, p.oid, 'MEMBER')),
	(SELECT string_agg(c.relname, ', ' ORDER BY c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	  WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_%'
	    AND has_table_privilege(current_user, c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER'))
FROM pg_roles r WHERE r.rolname = current_user`, pgRiskyRoles).Scan(&role, &super, &createRole, &createDB, &risky, &writable)
	if err != nil {
		return fmt.Errorf("query: check the role %s: %w", PGReaderRole, err)
	}
	var why []string
	if super {
		why = append(why, "it is a superuser (fix: ALTER ROLE "+role+" NOSUPERUSER)")
	}
	if createRole || createDB {
		why = append(why, "it may create roles or databases (fix: ALTER ROLE "+role+" NOCREATEROLE NOCREATEDB)")
	}
	if risky.Valid {
		why = append(why, fmt.Sprintf("it is a member of %s (fix: REVOKE %s FROM %s)", risky.String, risky.String, role))
	}
	if writable.Valid {
		why = append(why, fmt.Sprintf("it may write the tables %s (fix: REVOKE ALL ON %s FROM %s, PUBLIC; GRANT SELECT ON %s TO %s)",
			writable.String, writable.String, role, writable.String, role))
	}
	if len(why) > 0 {
		return fmt.Errorf("contentpipe sql refuses to run: the role %s it reads under can do more than read: %s", role, strings.Join(why, "; "))
	}
	return nil
}

// pgIdent quotes a role name for a statement shown in a message.
func pgIdent(name string) string {
	if regexp.MustCompile(`^[a-z_][a-z0-9_]*$`).MatchString(name) {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
