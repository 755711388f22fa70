package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	goredis "github.com/redis/go-redis/v9"
)

// Kinds of the database, archive and leases sections.
const (
	// KindSQLite keeps the data in an embedded SQLite file under
	// data_dir: one process alone.
	KindSQLite = "sqlite"
	// KindPostgres keeps it in a PostgreSQL database that several nodes
	// share.
	KindPostgres = "postgres"
	// KindDisabled runs without a terrain archive (archive only).
	KindDisabled = "disabled"
	// KindLocal keeps network leases on the node: in the SQLite
	// locations database (with database.kind sqlite), else in the
	// process's memory (leases only).
	KindLocal = "local"
	// KindRedis keeps network leases in Redis, shared by the nodes
	// (leases only).
	KindRedis = "redis"
)

// The environment variables a service's URL is read from when its kind
// wants one and the file gives none, so that credentials need not be
// written in the file.
const (
	EnvDatabaseURL = "RTP_DATABASE_URL"
	EnvArchiveURL  = "RTP_ARCHIVE_URL"
	EnvLeasesURL   = "RTP_LEASES_URL"
)

// Bounds of Node.
const (
	// MaxNodeNameLen is the longest node name, in bytes.
	MaxNodeNameLen = 128
	// MinNodeLease and MaxNodeLease bound Node.Lease.
	MinNodeLease = time.Second
	MaxNodeLease = time.Hour
)

// ServiceURL is the connection URL of a service (PostgreSQL, Redis), which
// may hold a password. fmt, slog, JSON and YAML show it with the password
// replaced by "xxxxx" (see RedactURL); Reveal returns it whole. The zero
// value is no URL.
type ServiceURL string

// String returns the URL without its password.
func (u ServiceURL) String() string { return RedactURL(string(u)) }

// GoString implements fmt.GoStringer without the password.
func (u ServiceURL) GoString() string { return fmt.Sprintf("config.ServiceURL(%q)", u.String()) }

// LogValue implements slog.LogValuer without the password.
func (u ServiceURL) LogValue() slog.Value { return slog.StringValue(u.String()) }

// MarshalText implements encoding.TextMarshaler without the password.
func (u ServiceURL) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// Reveal returns the URL, password and all.
func (u ServiceURL) Reveal() string { return string(u) }

// RedactURL returns s with every password it holds replaced by "xxxxx":
// the one of its user information and the query parameters whose name
// holds "password" (PostgreSQL takes ?password=). A string that does not
// parse as a URL with a scheme and "//" (a keyword connection string, say)
// keeps only its scheme. "" stays "".
func RedactURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		if scheme, _, ok := strings.Cut(s, "://"); ok && !strings.ContainsAny(scheme, "@:/") {
			return scheme + "://[unparsable URL]"
		}
		return "[unparsable URL]"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = "[unparsable query]"
		} else {
			changed := false
			for k := range q {
				if strings.Contains(strings.ToLower(k), "password") {
					q[k] = []string{"xxxxx"}
					changed = true
				}
			}
			if changed {
				u.RawQuery = q.Encode()
			}
		}
	}
	return u.String()
}

// serviceURL returns the URL in force for a section of the given kind,
// when that is wants, the kind that takes a URL: the file's url, else the
// environment variable env. For any other kind it is "". from is "" for
// the file's URL and env for the environment's.
func serviceURL(kind, wants string, file ServiceURL, env string) (u ServiceURL, from string) {
	if kind != wants {
		return "", ""
	}
	if file != "" {
		return file, ""
	}
	return ServiceURL(os.Getenv(env)), env
}

// ConnURL returns the PostgreSQL URL of a database of kind postgres: url,
// else the environment variable RTP_DATABASE_URL; "" for kind sqlite.
// from is "" when the URL is the file's, else the variable's name.
func (d Database) ConnURL() (u ServiceURL, from string) {
	return serviceURL(d.Kind, KindPostgres, d.URL, EnvDatabaseURL)
}

// ConnURL returns the PostgreSQL URL of an archive of kind postgres: url,
// else the environment variable RTP_ARCHIVE_URL; "" for the other kinds.
// from is as for Database.ConnURL.
func (a Archive) ConnURL() (u ServiceURL, from string) {
	return serviceURL(a.Kind, KindPostgres, a.URL, EnvArchiveURL)
}

// ConnURL returns the Redis URL of leases of kind redis: url, else the
// environment variable RTP_LEASES_URL; "" for kind local. from is as for
// Database.ConnURL.
func (l Leases) ConnURL() (u ServiceURL, from string) {
	return serviceURL(l.Kind, KindRedis, l.URL, EnvLeasesURL)
}

// Mode returns the archive in force: KindSQLite, KindPostgres or
// KindDisabled (kind disabled, or disabled: true over kind sqlite).
func (a Archive) Mode() string {
	if a.Disabled && a.Kind == KindSQLite {
		return KindDisabled
	}
	return a.Kind
}

// checkPostgresURL returns what is wrong with a PostgreSQL URL, or "". The
// message never quotes the URL, which may hold a password.
func checkPostgresURL(s string) string {
	if !strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://") {
		return "want a postgres:// or postgresql:// URL"
	}
	if _, err := pgconn.ParseConfig(s); err != nil {
		return "invalid PostgreSQL URL: " + pgParseCause(err)
	}
	return ""
}

// pgParseCause returns the reason pgconn could not parse a connection
// string, without the string: pgconn's message quotes it (its password
// masked, on a best-effort basis) before a backquote and a colon, and a
// URL syntax error quotes it whole.
func pgParseCause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, "`: "); i >= 0 {
		return msg[i+len("`: "):]
	}
	return "not a connection string pgx can read"
}

// checkRedisURL returns what is wrong with a Redis URL, or "", without
// quoting it.
func checkRedisURL(s string) string {
	if !strings.HasPrefix(s, "redis://") && !strings.HasPrefix(s, "rediss://") {
		return "want a redis:// or rediss:// URL"
	}
	if _, err := goredis.ParseURL(s); err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return "invalid Redis URL: " + ue.Err.Error()
		}
		return "invalid Redis URL: " + strings.TrimPrefix(err.Error(), "redis: ")
	}
	return ""
}

// section describes a section that may name a service.
type section struct {
	key     keyPath
	kinds   []string            // the kinds it takes
	urlKind string              // the kind that takes a url
	env     string              // the variable that url falls back to
	check   func(string) string // checks a URL of urlKind
}

var (
	databaseSection = section{keyPath{"database"}, []string{KindSQLite, KindPostgres}, KindPostgres, EnvDatabaseURL, checkPostgresURL}
	archiveSection  = section{keyPath{"archive"}, []string{KindSQLite, KindPostgres, KindDisabled}, KindPostgres, EnvArchiveURL, checkPostgresURL}
	leasesSection   = section{keyPath{"leases"}, []string{KindLocal, KindRedis}, KindRedis, EnvLeasesURL, checkRedisURL}
)

// service checks the kind of section s, and its url: the URL in force u
// (the file's, or the environment's when from names the variable) for
// the kind that takes one, no url written in the file for another kind.
func (v *validator) service(s section, kind string, file, u ServiceURL, from string) {
	if !slices.Contains(s.kinds, kind) {
		v.add(s.key.key("kind"), nil, "unknown %s kind %q: want %s", s.key, kind, orList(s.kinds))
		return
	}
	uk, related := s.key.key("url"), []keyPath{s.key.key("kind")}
	switch {
	case kind != s.urlKind:
		if file != "" {
			v.add(uk, related, "only used by kind %s (kind is %s): remove it, or change the kind", s.urlKind, kind)
		}
	case u == "":
		v.add(uk, related, "kind %s needs a URL: set %s or the environment variable %s", kind, uk, s.env)
	default:
		if msg := s.check(u.Reveal()); msg != "" {
			if from != "" {
				msg = from + ": " + msg
			}
			v.add(uk, related, "%s", msg)
		}
	}
}

// orList writes "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// services checks the database, archive, leases and node sections.
func (v *validator) services(c *Config) {
	u, from := c.Database.ConnURL()
	v.service(databaseSection, c.Database.Kind, c.Database.URL, u, from)
	if c.Database.Kind == KindSQLite {
		v.path(keyPath{"database", "path"}, c.Database.Path, true)
	}

	a := keyPath{"archive"}
	u, from = c.Archive.ConnURL()
	v.service(archiveSection, c.Archive.Kind, c.Archive.URL, u, from)
	switch c.Archive.Mode() {
	case KindSQLite:
		v.path(a.key("path"), c.Archive.Path, true)
	case KindPostgres:
		if c.Archive.Disabled {
			v.add(a.key("disabled"), []keyPath{a.key("kind")}, "true contradicts kind postgres: write kind: disabled to run without an archive")
		}
	}
	v.positive(a.key("max_entries"), c.Archive.MaxEntries)
	v.positive(a.key("max_bytes"), c.Archive.MaxBytes)
	if c.Archive.MinFreeBytes < 0 {
		v.add(a.key("min_free_bytes"), nil, "%d is negative: want a number of bytes, or 0 for no such bound", c.Archive.MinFreeBytes)
	}
	if p := c.Archive.MinFreePercent; !(p >= 0 && p <= 100) {
		v.add(a.key("min_free_percent"), nil, "%v: want 0 to 100 (0 for no such bound)", p)
	}

	u, from = c.Leases.ConnURL()
	v.service(leasesSection, c.Leases.Kind, c.Leases.URL, u, from)

	n := keyPath{"node"}
	if name := c.Node.Name; name != "" {
		if err := validNodeName(name); err != nil {
			v.add(n.key("name"), nil, "%v", err)
		}
	}
	if d := c.Node.Lease; d < MinNodeLease || d > MaxNodeLease {
		v.add(n.key("lease"), nil, "%v: want %v to %v", d, MinNodeLease, MaxNodeLease)
	}
}

// validNodeName reports whether name can name a node: 1 to MaxNodeNameLen
// ASCII letters, digits, '.', '_' and '-', starting with a letter or
// digit (a host name fits).
func validNodeName(name string) error {
	if len(name) > MaxNodeNameLen {
		return fmt.Errorf("longer than %d bytes", MaxNodeNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return fmt.Errorf("%q: want letters, digits, '.', '_' and '-', starting with a letter or digit", name)
		}
	}
	return nil
}
