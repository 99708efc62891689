package config

import (
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/contentpipe/contentpipe/telemetry"
)

// databaseSchemes are the URL schemes database: and the variable
// database_url_env names may use.
var databaseSchemes = []string{"postgres", "postgresql", "sqlite"}

// schemeRE is a URL scheme (RFC 3986: a letter, then letters, digits, '+',
// '-', '.').
var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)

// IsPostgres reports whether a database spec (Config.Database) names a
// PostgreSQL server rather than a SQLite file: a postgres:// URL or a
// connection string in libpq's keyword form (host=… dbname=…).
func IsPostgres(spec string) bool { return telemetry.IsPostgres(spec) }

// DatabaseName is the database for messages: the SQLite path, or the
// PostgreSQL URL with its password replaced. It is the only form of the
// database a message may show.
func (c *Config) DatabaseName() string { return DatabaseName(c.Database) }

// DatabaseName is Config.DatabaseName for any database spec.
func DatabaseName(spec string) string {
	if IsPostgres(spec) {
		return telemetry.RedactURL(spec)
	}
	return spec
}

// database resolves `database:` and `database_url_env:` into
// Config.Database: a path (relative to the config's directory) or
// sqlite:PATH for a SQLite file, a postgres:// URL for PostgreSQL, or the
// name of the variable holding such a URL. A URL is never echoed in a
// message (it may carry a password).
func (p *loader) database() {
	c, given := p.cfg, p.t.given["database"]
	v := strings.TrimSpace(c.Database)
	c.Database = Default(c.Dir).Database // until the file's is known good
	if given && c.DatabaseURLEnv != "" {
		p.fail("database_url_env", "keep one: database: for a path or a URL written in the file, or database_url_env: for a URL kept in the environment",
			"database (line %d) and database_url_env (line %d) are both set", p.t.line("database"), p.t.line("database_url_env"))
		return
	}
	if c.DatabaseURLEnv != "" {
		name := c.DatabaseURLEnv
		v := strings.TrimSpace(p.opt.getenv(name))
		if v == "" {
			p.check(false, "database_url_env", "set "+name+" in the environment (export "+name+"='postgres://user@host:5432/db') or remove database_url_env for the SQLite default",
				"database_url_env: %s is not set", name)
			return
		}
		if spec, msg, fix := p.databaseSpec(v, true); msg != "" {
			p.check(false, "database_url_env", fix, "database_url_env: the value of %s %s", name, msg)
		} else {
			c.Database = spec
		}
		return
	}
	if !given {
		return
	}
	if v == "" {
		p.check(false, "database", "remove the key for the default, or give a path or a postgres:// URL", "database: must not be empty")
		return
	}
	spec, msg, fix := p.databaseSpec(v, false)
	if msg != "" {
		p.check(false, "database", fix, "database: %s", msg)
		return
	}
	c.Database = spec
	if IsPostgres(spec) && telemetry.HasSecret(spec) {
		p.warn("database", "the URL carries a password (not shown); put the URL in the environment and name the variable instead: database_url_env: CONTENTPIPE_DATABASE_URL")
	}
}

// databaseSpec turns what the file or the variable holds into what
// telemetry.Open takes, or returns why it cannot (msg, fix) without
// repeating the value. fromEnv: the value came from database_url_env, where
// a plain path is not expected (but sqlite:PATH is).
func (p *loader) databaseSpec(v string, fromEnv bool) (spec, msg, fix string) {
	scheme, rest, hasScheme := strings.Cut(v, ":")
	lower := strings.ToLower(scheme)
	isURL := hasScheme && schemeRE.MatchString(scheme) && strings.HasPrefix(rest, "//")
	if !isURL && IsPostgres(v) {
		// libpq's keyword form: host=… dbname=… (never a file name).
		return v, "", ""
	}
	if !isURL && !(hasScheme && slices.Contains(databaseSchemes, lower)) {
		// A plain path (a colon inside a file name included).
		if fromEnv {
			return "", "is not a postgres:// URL (the value is not shown)", "put a URL like postgres://user@host:5432/db in the variable, or sqlite:PATH for a SQLite file"
		}
		return resolvePath(p.cfg.Dir, v), "", ""
	}
	switch lower {
	case "sqlite":
		path := strings.TrimPrefix(rest, "//")
		if strings.TrimSpace(path) == "" {
			return "", "sqlite: needs a path", "write sqlite:data/pipeline.db (relative to the config file's directory) or an absolute path"
		}
		return resolvePath(p.cfg.Dir, path), "", ""
	case "postgres", "postgresql":
		u, err := url.Parse(v)
		if err != nil || !isURL {
			return "", "is not a valid postgres:// URL (the value is not shown: it may hold a password)", "write it as postgres://user[:password]@host[:port]/database[?sslmode=…]; percent-encode special characters of the password"
		}
		if strings.Trim(u.Path, "/") == "" {
			return "", "the postgres:// URL names no database", "add the database name after the host: postgres://user@host:5432/contentpipe"
		}
		if scheme != lower {
			v = lower + ":" + rest
		}
		return v, "", ""
	}
	return "", "unknown database scheme \"" + scheme + "\" (the rest of the value is not shown)",
		suggest(lower, databaseSchemes, "database schemes") + "; a SQLite file is a path or sqlite:PATH, PostgreSQL a postgres:// URL"
}
