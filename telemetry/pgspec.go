package telemetry

import (
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// isPostgresURL reports whether spec names a PostgreSQL database: a
// postgres:// or postgresql:// URL, or a connection string in libpq's
// keyword form (host=… dbname=… …; see pgKeywords).
func isPostgresURL(spec string) bool {
	if strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://") {
		return true
	}
	_, ok := pgKeywords(spec)
	return ok
}

// IsPostgres is isPostgresURL for the packages that take a database spec.
func IsPostgres(spec string) bool { return isPostgresURL(spec) }

// libpqKeys are the keywords of libpq's connection strings that mark one:
// a string of key=value pairs with at least one of them is PostgreSQL,
// never a file name.
var libpqKeys = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "password": true,
	"sslmode": true, "service": true, "passfile": true, "connect_timeout": true, "application_name": true,
	"sslpassword": true, "sslkey": true, "sslcert": true, "sslrootcert": true, "target_session_attrs": true, "options": true,
}

// pgKeyword is one key=value pair of a keyword-form connection string.
type pgKeyword struct{ key, value string }

var pgKeyRE = regexp.MustCompile(`^[a-z_]+$`)

// pgKeywords parses spec as libpq's keyword form: whitespace-separated
// key = value pairs, a value single-quoted (” or \' inside) or bare. ok is
// false unless every part parses and one key is a libpq keyword.
func pgKeywords(spec string) (kv []pgKeyword, ok bool) {
	s := strings.TrimSpace(spec)
	known := false
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil, false
		}
		key := strings.TrimSpace(s[:eq])
		if !pgKeyRE.MatchString(key) {
			return nil, false
		}
		known = known || libpqKeys[key]
		s = strings.TrimLeft(s[eq+1:], " \t\n")
		var val strings.Builder
		if strings.HasPrefix(s, "'") {
			i, closed := 1, false
			for ; i < len(s); i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
					val.WriteByte(s[i])
					continue
				}
				if s[i] == '\'' {
					closed = true
					break
				}
				val.WriteByte(s[i])
			}
			if !closed {
				return nil, false
			}
			s = s[i+1:]
		} else {
			i := strings.IndexAny(s, " \t\n")
			if i < 0 {
				i = len(s)
			}
			val.WriteString(strings.ReplaceAll(s[:i], `\`, ""))
			s = s[i:]
		}
		kv = append(kv, pgKeyword{key, val.String()})
		s = strings.TrimLeft(s, " \t\n")
	}
	return kv, known && len(kv) > 0
}

// secretParam reports whether a connection parameter (a URL query
// parameter or a keyword) holds a secret: password, sslpassword, sslkey
// and anything named like a password, secret or token.
func secretParam(key string) bool {
	k := strings.ToLower(key)
	return k == "sslkey" || strings.Contains(k, "password") || strings.Contains(k, "secret") || strings.Contains(k, "token")
}

// RedactURL returns a PostgreSQL database spec for messages: a URL with
// its user-info password and every secret query parameter (secretParam)
// replaced by "xxxxx", a keyword-form connection string with the values of
// its secret keys replaced. Anything else is returned unchanged when it
// has no '@' and no "password", and as "(unparsable database URL)"
// otherwise.
func RedactURL(u string) string {
	if kv, ok := pgKeywords(u); ok && !strings.Contains(u, "://") {
		parts := make([]string, len(kv))
		for i, p := range kv {
			v := p.value
			if secretParam(p.key) {
				v = "xxxxx"
			} else if v == "" || strings.ContainsAny(v, ` '\`) {
				v = "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
			}
			parts[i] = p.key + "=" + v
		}
		return strings.Join(parts, " ")
	}
	p, err := url.Parse(u)
	if err != nil {
		if strings.Contains(u, "@") || strings.Contains(strings.ToLower(u), "password") {
			return "(unparsable database URL)"
		}
		return u
	}
	if p.User != nil {
		if _, has := p.User.Password(); has {
			p.User = url.UserPassword(p.User.Username(), "xxxxx")
		}
	}
	if q := p.Query(); len(q) > 0 {
		changed := false
		for k := range q {
			if secretParam(k) {
				q.Set(k, "xxxxx")
				changed = true
			}
		}
		if changed {
			p.RawQuery = q.Encode()
		}
	}
	return p.String()
}

// specSecrets are the secret values of a database spec (see RedactURL), in
// the forms a message may quote them: as given and percent-encoded;
// longest first.
func specSecrets(u string) []string {
	var out []string
	add := func(v string) {
		if v == "" {
			return
		}
		out = append(out, v)
		if esc := url.QueryEscape(v); esc != v {
			out = append(out, esc)
		}
		if esc := url.UserPassword("", v).String(); len(esc) > 2 && esc[2:] != v {
			out = append(out, esc[2:])
		}
	}
	if kv, ok := pgKeywords(u); ok && !strings.Contains(u, "://") {
		for _, p := range kv {
			if secretParam(p.key) {
				add(p.value)
			}
		}
	} else if p, err := url.Parse(u); err == nil {
		if p.User != nil {
			if pw, has := p.User.Password(); has {
				add(pw)
			}
		}
		for k, vs := range p.Query() {
			if secretParam(k) {
				for _, v := range vs {
					add(v)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// scrub removes u's secrets (specSecrets) from err's text (pgx's own
// messages are redacted on a best-effort basis only).
func scrub(err error, u string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, sec := range specSecrets(u) {
		msg = strings.ReplaceAll(msg, sec, "xxxxx")
	}
	if msg == err.Error() {
		return err
	}
	return scrubbed{msg: msg, err: err}
}

// HasSecret reports whether a PostgreSQL spec carries a secret (see
// RedactURL); an unreadable URL counts as one.
func HasSecret(spec string) bool {
	if _, ok := pgKeywords(spec); !ok || strings.Contains(spec, "://") {
		if _, err := url.Parse(spec); err != nil {
			return true
		}
	}
	return len(specSecrets(spec)) > 0
}

// PostgresTarget is the server and database a PostgreSQL spec (either
// form) names, for telling whether two specs name one database.
func PostgresTarget(spec string) (host string, port uint16, database string, ok bool) {
	cfg, err := pgconn.ParseConfig(spec)
	if err != nil {
		return "", 0, "", false
	}
	return strings.ToLower(cfg.Host), cfg.Port, cfg.Database, true
}
