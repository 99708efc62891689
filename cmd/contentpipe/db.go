package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/telemetry"
)

func (a *app) dbCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "db",
		Short: "Work with the database itself (copy it to PostgreSQL or back)",
		Args:  cobra.NoArgs,
	}
	var to string
	cp := &cobra.Command{
		Use:   "copy --to URL",
		Short: "Copy every table of the configured database into an empty one, verifying row counts",
		Long: `copy reads every table of the config's database and writes it into the
database --to names: a postgres:// URL (the move to PostgreSQL), or sqlite:PATH
for a SQLite file (the way back). The destination must be empty (a fresh
PostgreSQL database, or a SQLite file that does not exist yet); its schema is
created first. Each table's row count is compared between both sides after the
copy, and the command fails unless every one matches. The source is left as
it was; stop serve and any run (systemctl stop contentpipe.timer) before the
copy, then point database: or database_url_env at the destination. The copy
carries the database's publishing target: a config with another target is
refused on the copy as on the original.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.dbCopy(cmd, to) },
	}
	cp.Flags().StringVar(&to, "to", "", "destination: postgres://USER@HOST:5432/DB (a password goes in the URL or PGPASSWORD-style in the environment) or sqlite:PATH")
	c.AddCommand(cp)
	return c
}

// dbCopy copies the configured database into the one to names.
func (a *app) dbCopy(cmd *cobra.Command, to string) error {
	to = strings.TrimSpace(to)
	if to == "" {
		return exitWith(exitConfig, errors.New("db copy: --to is required: --to postgres://USER@HOST:5432/DB, or --to sqlite:PATH for a SQLite file"))
	}
	dst, err := copyDestination(to)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	cfg, err := a.readConfig(cmd)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	srcName, dstName := cfg.DatabaseName(), config.DatabaseName(dst)
	if sameDatabase(cfg.Database, dst) {
		return exitWith(exitConfig, fmt.Errorf("db copy: %s is the configured database itself; give another destination with --to", dstName))
	}
	if !dbExists(cfg.Database) {
		return exitWith(exitConfig, fmt.Errorf("db copy: no database at %s: nothing to copy (run contentpipe run first, or check database: in %s)", srcName, cfg.Path))
	}
	if !config.IsPostgres(dst) && fileExists(dst) {
		if st, err := os.Stat(dst); err == nil && st.Size() > 0 {
			return exitWith(exitConfig, fmt.Errorf("db copy: %s already exists: the destination must be a new file (move it away or name another path)", dstName))
		}
	}
	ctx := cmd.Context()
	src, err := telemetry.Open(cfg.Database)
	if err != nil {
		return exitWith(exitPartial, fmt.Errorf("db copy: source: %w", err))
	}
	defer src.Close()
	// A SQLite destination is written as PATH.partial and renamed to PATH
	// once verified and closed: a copy killed halfway leaves nothing at
	// PATH that would block the retry (which replaces the .partial file).
	final, open := dst, dst
	if !config.IsPostgres(dst) {
		open = dst + ".partial"
		removeSQLite(open)
	}
	out, err := telemetry.Open(open)
	if err != nil {
		return exitWith(exitPartial, fmt.Errorf("db copy: destination: %w", err))
	}
	defer out.Close()
	newCrashPoints().arm(out, nil)
	fmt.Fprintf(a.stdout, "copying %s (%s) → %s (%s)\n", srcName, src.Backend(), dstName, out.Backend())
	rep, err := telemetry.Copy(ctx, src, out)
	if err == nil && open != final {
		if err = out.Close(); err == nil {
			err = renameNew(open, final)
		}
	}
	if open != final {
		removeSQLite(open)
	}
	if err != nil {
		return exitWith(exitPartial, fmt.Errorf("db copy: %w", err))
	}
	w := a.stdout
	fmt.Fprintf(w, "  %-22s %10s\n", "table", "rows")
	for _, t := range rep.Tables {
		fmt.Fprintf(w, "  %-22s %10d\n", t.Table, t.Rows)
	}
	fmt.Fprintf(w, "verified: %d rows in %d tables, each table's count the same in %s as in %s\n", rep.Total(), len(rep.Tables), dstName, srcName)
	key := "database: " + dstName
	if config.IsPostgres(dst) {
		key = "database_url_env: CONTENTPIPE_DATABASE_URL (with the URL in that variable), or database: " + dstName
	}
	where := cfg.Path
	if !fileExists(cfg.Path) {
		// No config file: the demo's settings were used.
		where = "your config file (none yet: copy data/contentpipe.example.yaml to contentpipe.yaml)"
	}
	fmt.Fprintf(w, "next: set %s in %s; %s is left as it was\n", key, where, srcName)
	return nil
}

// removeSQLite removes a SQLite file and its journal files, if any.
func removeSQLite(path string) {
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		_ = os.Remove(p)
	}
}

// renameNew renames from to to unless to exists by now (another copy was
// faster): the hard link fails on an existing name, then from goes.
func renameNew(from, to string) error {
	if err := os.Link(from, to); err != nil {
		return fmt.Errorf("%s: %w (the copy is not kept)", to, err)
	}
	return os.Remove(from)
}

// copyDestination is what telemetry.Open takes for --to: a postgres:// URL
// as given, or the absolute path of sqlite:PATH (relative to the working
// directory). A bare path is refused: the flag says which backend it means.
func copyDestination(to string) (string, error) {
	if config.IsPostgres(to) {
		if _, _, _, ok := telemetry.PostgresTarget(to); !ok {
			return "", fmt.Errorf("db copy: --to is not a valid URL (not shown: it may hold a password); the form is postgres://USER:PASSWORD@HOST:5432/DB or host=HOST dbname=DB user=USER")
		}
		return to, nil
	}
	if p, ok := strings.CutPrefix(to, "sqlite:"); ok && strings.TrimSpace(p) != "" {
		abs, err := filepath.Abs(strings.TrimPrefix(p, "//"))
		if err != nil {
			return "", fmt.Errorf("db copy: --to %s: %w", to, err)
		}
		return abs, nil
	}
	return "", fmt.Errorf("db copy: --to %s: give postgres://USER@HOST:5432/DB or sqlite:PATH", config.DatabaseName(to))
}

// sameDatabase reports whether two database specs name one database: the
// same SQLite file, or the same server, port and database name.
func sameDatabase(a, b string) bool {
	if config.IsPostgres(a) != config.IsPostgres(b) {
		return false
	}
	if !config.IsPostgres(a) {
		ra, ea := filepath.EvalSymlinks(a)
		rb, eb := filepath.EvalSymlinks(b)
		if ea == nil && eb == nil {
			return ra == rb
		}
		return filepath.Clean(a) == filepath.Clean(b)
	}
	ha, pa, da, oka := telemetry.PostgresTarget(a)
	hb, pb, db, okb := telemetry.PostgresTarget(b)
	return oka && okb && ha == hb && pa == pb && da == db
}
