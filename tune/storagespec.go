package tune

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/servebench/servebench/internal/redact"
)

// storageSpec is a --storage value read: which database, how to open it,
// and how messages show it.
type storageSpec struct {
	driver string // "sqlite" or "pgx"
	dsn    string
	// shown is the value with every password masked, for messages.
	shown string
	// path is the SQLite file; "" for PostgreSQL.
	path string
	// secrets are the passwords the value holds, masked out of errors.
	secrets []string
}

// parseStorage reads a --storage value: FILE.db, sqlite:///FILE,
// sqlite://FILE, a postgresql:// or postgres:// URL, or a PostgreSQL
// key=value connection string (host=db user=tune password=...).
func parseStorage(spec string) (storageSpec, error) {
	if strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://") {
		if _, err := url.Parse(spec); err != nil {
			return storageSpec{}, fmt.Errorf("--storage %s: not a valid URL; use postgresql://USER@HOST/DB", redact.Text(spec, redact.URLSecrets(spec)))
		}
		return storageSpec{driver: "pgx", dsn: spec, shown: redact.URL(spec), secrets: redact.URLSecrets(spec)}, nil
	}
	if pairs, ok := parseKeywordValue(spec); ok {
		return storageSpec{driver: "pgx", dsn: spec, shown: joinKeywordValue(pairs, true), secrets: keywordSecrets(pairs)}, nil
	}
	if looksKeywordValue(spec) {
		return storageSpec{}, fmt.Errorf("--storage %s: reads as a PostgreSQL key=value connection string but does not parse as one; write key=value pairs with libpq's key words, quoting values with spaces: host=HOST dbname=DB user=USER password='...'", maskPasswordPairs(spec))
	}
	if strings.Contains(spec, "://") && !strings.HasPrefix(spec, "sqlite://") {
		return storageSpec{}, fmt.Errorf("--storage %q: use FILE.db, sqlite:///FILE, postgresql://USER@HOST/DB or host=HOST dbname=DB user=USER", redact.URL(spec))
	}
	// SQLAlchemy's spelling, as Optuna users type it: sqlite:///rel.db
	// is relative, sqlite:////abs.db absolute.
	path := strings.TrimPrefix(strings.TrimPrefix(spec, "sqlite:///"), "sqlite://")
	if path == "" {
		return storageSpec{}, fmt.Errorf("--storage %q names no file", spec)
	}
	// WAL lets readers see a consistent study while another worker
	// writes; busy_timeout makes two workers wait for each other
	// instead of failing with SQLITE_BUSY.
	dsn := "file:" + path + "?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_txlock=immediate"
	return storageSpec{driver: "sqlite", dsn: dsn, shown: spec, path: path}, nil
}

// SplitStoragePassword takes the password out of a PostgreSQL --storage
// value (the URL's user part, a password query parameter, or a
// password= pair), so it can travel apart from the rest, e.g. as
// PGPASSWORD, which PostgreSQL clients read when the connection string
// has none. A value without a password comes back unchanged.
func SplitStoragePassword(spec string) (rest, password string, err error) {
	s, err := parseStorage(spec)
	if err != nil {
		return "", "", err
	}
	if s.driver != "pgx" {
		return "", "", fmt.Errorf("--storage %s: not PostgreSQL; give postgresql://USER@HOST/DB or host=HOST dbname=DB user=USER", s.shown)
	}
	if pairs, ok := parseKeywordValue(spec); ok {
		var kept [][2]string
		for _, p := range pairs {
			if p[0] == "password" {
				password = p[1]
				continue
			}
			kept = append(kept, p)
		}
		return joinKeywordValue(kept, false), password, nil
	}
	u, _ := url.Parse(spec) // parseStorage checked it
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			password = p
			u.User = url.User(u.User.Username())
		}
	}
	if q := u.Query(); q.Has("password") {
		if password == "" {
			password = q.Get("password")
		}
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	return u.String(), password, nil
}

// libpqKeywords are the parameter names of a PostgreSQL key=value
// connection string (libpq's "Parameter Key Words"); a value made of
// such pairs is PostgreSQL, not a file name.
var libpqKeywords = []string{
	"host", "hostaddr", "port", "dbname", "user", "password", "passfile", "require_auth", "channel_binding",
	"connect_timeout", "client_encoding", "options", "application_name", "fallback_application_name",
	"keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout",
	"replication", "gssencmode", "sslmode", "requiressl", "sslnegotiation", "sslcompression", "sslcert", "sslkey",
	"sslkeylogfile", "sslpassword", "sslcertmode", "sslrootcert", "sslcrl", "sslcrldir", "sslsni", "requirepeer",
	"ssl_min_protocol_version", "ssl_max_protocol_version", "krbsrvname", "gsslib", "gssdelegation",
	"service", "target_session_attrs", "load_balance_hosts", "min_protocol_version", "max_protocol_version",
}

// parseKeywordValue reads "key=value key='quoted value'" as libpq does
// (spaces around '=' allowed, backslash escapes in values); ok is false
// unless every key is a libpq keyword.
func parseKeywordValue(s string) (pairs [][2]string, ok bool) {
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
	}
	for {
		skip()
		if i >= len(s) {
			return pairs, len(pairs) > 0
		}
		start := i
		for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] == '_') {
			i++
		}
		key := s[start:i]
		if !slices.Contains(libpqKeywords, key) {
			return nil, false
		}
		skip()
		if i >= len(s) || s[i] != '=' {
			return nil, false
		}
		i++
		skip()
		var value strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				i++
				if c == '\\' && i < len(s) {
					value.WriteByte(s[i])
					i++
					continue
				}
				if c == '\'' {
					closed = true
					break
				}
				value.WriteByte(c)
			}
			if !closed {
				return nil, false
			}
		} else {
			for i < len(s) && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				value.WriteByte(s[i])
				i++
			}
		}
		pairs = append(pairs, [2]string{key, value.String()})
	}
}

// joinKeywordValue writes pairs back as a key=value string, quoting
// values as libpq reads them; mask replaces passwords.
func joinKeywordValue(pairs [][2]string, mask bool) string {
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		v := p[1]
		if mask && (p[0] == "password" || p[0] == "sslpassword") {
			v = redact.Mask
		}
		if v == "" || strings.ContainsAny(v, " \t\n\r'\\") {
			v = "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
		}
		parts[i] = p[0] + "=" + v
	}
	return strings.Join(parts, " ")
}

func keywordSecrets(pairs [][2]string) []string {
	var out []string
	for _, p := range pairs {
		if (p[0] == "password" || p[0] == "sslpassword") && p[1] != "" {
			out = append(out, p[1])
		}
	}
	return out
}

// looksKeywordValue reports whether spec has a word that starts as a
// key=value pair with one of libpq's key words: no file name does.
func looksKeywordValue(spec string) bool {
	for _, f := range strings.Fields(spec) {
		if k, _, ok := strings.Cut(f, "="); ok && slices.Contains(libpqKeywords, k) && strings.ContainsAny(spec, " \t") {
			return true
		}
	}
	return false
}

var passwordPair = regexp.MustCompile(`((?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|\S+)`)

// maskPasswordPairs masks the value of each password= in text that did
// not parse as a connection string.
func maskPasswordPairs(s string) string {
	return passwordPair.ReplaceAllString(s, "${1}"+redact.Mask)
}
