package runspec

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/servebench/servebench/internal/redact"
)

// Secret is a credential (an API key, a password). It prints, marshals
// and logs as [REDACTED]; only Reveal gives the value, to the code that
// sends it.
type Secret struct{ value string }

// NewSecret wraps a credential.
func NewSecret(v string) Secret { return Secret{value: v} }

// Reveal is the credential itself.
func (s Secret) Reveal() string { return s.value }

// IsZero reports whether no credential is set.
func (s Secret) IsZero() bool { return s.value == "" }

// String is the mask, or "" when unset.
func (s Secret) String() string {
	if s.value == "" {
		return ""
	}
	return redact.Mask
}

// MarshalText keeps the credential out of JSON, YAML and any other
// encoding of a spec.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Header is one --header: a request header the bench client sends. The
// value of a header whose name carries a credential (Authorization,
// X-Api-Key, Cookie, ...) is a secret.
type Header struct {
	Name  string
	Value string
	// invalid holds an item that is not "Name: value" or Name=value, kept
	// whole (it may be a bare token) for the validator to refuse without
	// repeating it.
	invalid bool
}

// Credential reports whether the header's value is a secret.
func (h Header) Credential() bool { return h.invalid || redact.IsCredentialName(h.Name) }

// String is "Name: value" with a credential's value masked.
func (h Header) String() string {
	switch {
	case h.invalid:
		return redact.Mask
	case h.Credential():
		return h.Name + ": " + redact.Mask
	}
	return h.Name + ": " + h.Value
}

// MarshalJSON writes the masked form.
func (h Header) MarshalJSON() ([]byte, error) { return json.Marshal(h.String()) }

// reveal is the header as typed on a command line, secret included.
func (h Header) reveal() string {
	if h.invalid {
		return h.Value
	}
	return h.Name + ": " + h.Value
}

// ParseHeader reads "Name: value" (curl's form) or Name=value (vLLM's).
// Its error never repeats the item, which may be a credential.
func ParseHeader(item string) (Header, error) {
	name, value, err := redact.SplitHeader(item)
	if err != nil {
		return Header{Value: item, invalid: true}, err
	}
	return Header{Name: name, Value: value}, nil
}

// urlSecrets is the password of a URL, if it holds one.
func urlSecrets(s string) []string {
	if !strings.Contains(s, "@") {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return nil
	}
	if p, ok := u.User.Password(); ok && p != "" {
		return []string{p}
	}
	return nil
}

// metadataSecret is the value of a credential-named --metadata pair.
func metadataSecret(item string) (string, bool) {
	k, v, ok := strings.Cut(item, "=")
	if !ok || !redact.IsCredentialName(k) || v == "" {
		return "", false
	}
	return v, true
}

// maskMetadata masks the value of a credential-named KEY=VALUE pair:
// metadata describes a run in its result file, where a credential has no
// use.
func maskMetadata(item string) string {
	if _, ok := metadataSecret(item); ok {
		k, _, _ := strings.Cut(item, "=")
		return k + "=" + redact.Mask
	}
	return item
}
