// Package redact keeps credentials given on a command line (request
// headers such as Authorization, passwords in URLs, credential-named
// --metadata entries) out of everything servebench writes: manifests,
// logs, error messages and result metadata. It only recognises and masks;
// callers decide where to apply it.
package redact

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
)

// Mask replaces a secret.
const Mask = "[REDACTED]"

// credentialWords mark a header or key name that carries a credential:
// Authorization, Proxy-Authorization, X-Auth-Token, Api-Key, X-Api-Key,
// Ocp-Apim-Subscription-Key, Cookie, Set-Cookie, X-Goog-Api-Key, ...
// Masking a harmless header is cheap; writing a token to disk is not.
var credentialWords = []string{"auth", "key", "token", "cookie", "secret", "passw", "session", "credential", "signature"}

// IsCredentialName reports whether a header or key name looks like it
// carries a credential.
func IsCredentialName(name string) bool {
	n := strings.ToLower(name)
	return slices.ContainsFunc(credentialWords, func(w string) bool { return strings.Contains(n, w) })
}

// SplitHeader parses a header given on a command line as "Name: value"
// (curl's form) or "Name=value" (vLLM's), whichever separator comes first.
// Its error never repeats the value, which may be a credential.
func SplitHeader(s string) (name, value string, err error) {
	i := strings.IndexAny(s, ":=")
	if i < 0 {
		return "", "", fmt.Errorf("header of %d characters has no ':' or '=': use \"Name: value\" or Name=value", len(s))
	}
	name = strings.TrimSpace(s[:i])
	if name == "" || strings.ContainsAny(name, " \t") {
		return "", "", errors.New(`header has no valid name before its ':' or '=': use "Name: value" or Name=value`)
	}
	return name, strings.TrimSpace(s[i+1:]), nil
}

// headerFlags and keyValueFlags are the flags whose values Args inspects.
var (
	headerFlags   = []string{"header", "H"}
	keyValueFlags = []string{"metadata"}
)

// Args returns a copy of a command line with credentials masked: values
// of credential headers (--header 'Authorization: Bearer X' becomes
// --header 'Authorization: [REDACTED]'), headers that cannot be parsed,
// credential-named --metadata values, and passwords in URLs. Both
// "--flag value" and "--flag=value" are handled.
func Args(args []string) []string { return mask(args, true) }

// MetadataArgs masks only credential-named --metadata values: metadata is
// a description copied into result files, so a credential there has no use
// and would reach disk, while the headers must still reach the server.
func MetadataArgs(args []string) []string { return mask(args, false) }

func mask(args []string, all bool) []string {
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		flag, value, inline, ok := flagValue(out, i)
		if !ok {
			if all {
				out[i] = URL(out[i])
			}
			continue
		}
		if !all && !slices.Contains(keyValueFlags, flag) {
			if !inline {
				i++ // skip the header's value
			}
			continue
		}
		masked := maskValue(flag, value)
		if inline {
			out[i] = out[i][:len(out[i])-len(value)] + masked
		} else {
			out[i+1] = masked
			i++
		}
	}
	return out
}

// flagValue reports whether args[i] is a flag whose value Args inspects,
// and that value.
func flagValue(args []string, i int) (flag, value string, inline, ok bool) {
	arg := args[i]
	if !strings.HasPrefix(arg, "-") {
		return "", "", false, false
	}
	name, value, inline := strings.Cut(arg, "=")
	flag = strings.TrimLeft(name, "-")
	if !slices.Contains(headerFlags, flag) && !slices.Contains(keyValueFlags, flag) {
		return "", "", false, false
	}
	if !inline {
		if i+1 >= len(args) {
			return "", "", false, false
		}
		value = args[i+1]
	}
	return flag, value, inline, true
}

func maskValue(flag, value string) string {
	if slices.Contains(keyValueFlags, flag) {
		k, _, found := strings.Cut(value, "=")
		if found && IsCredentialName(k) {
			return k + "=" + Mask
		}
		return value
	}
	name, _, err := SplitHeader(value)
	if err != nil {
		return Mask
	}
	if !IsCredentialName(name) {
		return value
	}
	i := strings.IndexAny(value, ":=")
	if value[i] == ':' {
		return value[:i] + ": " + Mask
	}
	return value[:i] + "=" + Mask
}

// URL masks the password of a URL (http://user:pass@host); anything else
// is returned unchanged.
func URL(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, has := u.User.Password(); !has {
		return s
	}
	return u.Redacted()
}

// minSecretLen keeps very short values (a header "X-Key: 1") from being
// masked out of every log line they happen to appear in.
const minSecretLen = 4

// Secrets lists the credential values on a command line, longest first,
// for scrubbing free text that may quote them (errors, logs). A bearer
// token is listed alone as well as with its scheme, since messages may
// quote either.
func Secrets(args []string) []string {
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if len(s) >= minSecretLen && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for i := 0; i < len(args); i++ {
		flag, value, inline, ok := flagValue(args, i)
		if !ok {
			if u, err := url.Parse(args[i]); err == nil && u.User != nil {
				if p, has := u.User.Password(); has {
					add(p)
				}
			}
			continue
		}
		if !inline {
			i++
		}
		if slices.Contains(keyValueFlags, flag) {
			if k, v, found := strings.Cut(value, "="); found && IsCredentialName(k) {
				add(v)
			}
			continue
		}
		name, v, err := SplitHeader(value)
		switch {
		case err != nil:
			add(value)
		case IsCredentialName(name):
			add(v)
			if fields := strings.Fields(v); len(fields) > 1 {
				add(fields[len(fields)-1])
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
}

// Text replaces every secret in s with Mask.
func Text(s string, secrets []string) string {
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, Mask)
	}
	return s
}

// Error returns err with secrets masked in its message; errors.Is and As
// still see the original chain.
func Error(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	msg := Text(err.Error(), secrets)
	if msg == err.Error() {
		return err
	}
	return &maskedError{err: err, msg: msg}
}

type maskedError struct {
	err error
	msg string
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// Writer masks secrets in everything written through it. It holds back
// an unfinished line until its newline or Close, so a secret split across
// two writes is still caught (header values cannot span lines).
type Writer struct {
	w       io.Writer
	secrets []string
	pending []byte
}

// NewWriter wraps w.
func NewWriter(w io.Writer, secrets []string) *Writer {
	return &Writer{w: w, secrets: secrets}
}

func (m *Writer) Write(p []byte) (int, error) {
	m.pending = append(m.pending, p...)
	end := strings.LastIndexByte(string(m.pending), '\n')
	if end < 0 {
		return len(p), nil
	}
	if _, err := io.WriteString(m.w, Text(string(m.pending[:end+1]), m.secrets)); err != nil {
		return 0, err
	}
	m.pending = append(m.pending[:0], m.pending[end+1:]...)
	return len(p), nil
}

// Close writes the unfinished last line; it does not close the
// underlying writer.
func (m *Writer) Close() error {
	if len(m.pending) == 0 {
		return nil
	}
	_, err := io.WriteString(m.w, Text(string(m.pending), m.secrets))
	m.pending = nil
	return err
}
