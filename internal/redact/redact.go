// Package redact keeps credentials (request headers such as
// Authorization, passwords in URLs, credential-named metadata) out of
// everything servebench writes: manifests, logs, error messages and result
// metadata. It recognises credential names and masks values in URLs, free
// text, errors and streams; the run spec's typed secrets say which values
// to mask, and callers decide where.
package redact

import (
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

// URL masks the credentials of a URL: the password of its user part
// (http://user:pass@host) and the value of every credential-named query
// parameter (?password=..., ?api_key=...), as libpq and many gateways
// accept them. Anything else is returned unchanged.
func URL(s string) string {
	if !strings.ContainsAny(s, "@?") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	changed := false
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), Mask)
			changed = true
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k, vs := range q {
			if IsCredentialName(k) {
				for i := range vs {
					vs[i] = Mask
				}
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	if !changed {
		return s
	}
	// url.URL escapes the mask's brackets; a reader should see the mask.
	out := u.String()
	for _, esc := range []string{"%5BREDACTED%5D", "%5bREDACTED%5d"} {
		out = strings.ReplaceAll(out, esc, Mask)
	}
	return out
}

// URLSecrets lists the credentials URL masks: the user part's password
// and the values of credential-named query parameters.
func URLSecrets(s string) []string {
	if !strings.ContainsAny(s, "@?") {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			out = append(out, p)
		}
	}
	for k, vs := range u.Query() {
		if IsCredentialName(k) {
			for _, v := range vs {
				if v != "" {
					out = append(out, v)
				}
			}
		}
	}
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
