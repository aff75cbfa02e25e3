package runspec

import (
	"encoding/json"
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

// urlSecrets are the credentials of a URL: its password and any
// credential-named query parameter.
func urlSecrets(s string) []string { return redact.URLSecrets(s) }

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

// EnvBaseURL holds --base-url for a spec whose file masks its
// credentials (a password, an api_key query parameter).
const EnvBaseURL = "SERVEBENCH_BASE_URL"

// HeaderEnvVar is the environment variable holding the value of the
// header name for a spec whose file masks it: SERVEBENCH_HEADER_ and the
// name in upper case, with any character but a letter or digit as '_'
// (Authorization: SERVEBENCH_HEADER_AUTHORIZATION, X-Api-Key:
// SERVEBENCH_HEADER_X_API_KEY).
func HeaderEnvVar(name string) string {
	b := []byte(strings.ToUpper(name))
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return "SERVEBENCH_HEADER_" + string(b)
}

// FillSecrets gives the masked secrets of a spec read from a file (the
// spec.yaml of a Kubernetes pod, whose secrets come from a Secret) their
// values from the environment: each credential header whose value is
// the mask from HeaderEnvVar(name), a masked --base-url from
// EnvBaseURL. What lookup lacks stays masked, and the validator refuses
// it naming the variable.
func (s *Spec) FillSecrets(lookup func(string) (string, bool)) {
	for i, h := range s.Target.Headers {
		if h.invalid || h.Value != redact.Mask {
			continue
		}
		if v, ok := lookup(HeaderEnvVar(h.Name)); ok {
			s.Target.Headers[i].Value = strings.TrimSpace(v)
		}
	}
	if strings.Contains(s.Target.BaseURL, redact.Mask) {
		if v, ok := lookup(EnvBaseURL); ok && v != "" {
			s.Target.BaseURL = v
		}
	}
}

// CredentialHeaders are the spec's headers whose values are secrets.
func (s *Spec) CredentialHeaders() []Header {
	var out []Header
	for _, h := range s.Target.Headers {
		if h.Credential() && !h.invalid {
			out = append(out, h)
		}
	}
	return out
}

// BaseURLHasSecrets reports whether --base-url holds a credential, which
// a spec file masks.
func (s *Spec) BaseURLHasSecrets() bool { return len(urlSecrets(s.Target.BaseURL)) > 0 }

// MaskArgs masks the secrets in a command line's bench flags (the values
// of credential --header items, the credentials of --base-url), as
// anything that prints or stores the command line needs, and returns
// what it masked: the credential headers, and the base URL when it held
// a credential. Other arguments pass unchanged, "--" included.
func MaskArgs(args []string) (masked []string, headers []Header, baseURL string) {
	// Each part between "--" is one command's flags (tune's, then its
	// trials'), expanded as that command parses them.
	var expanded []string
	for i, part := range splitAtDashes(args) {
		if i > 0 {
			expanded = append(expanded, "--")
		}
		expanded = append(expanded, ExpandMultiValueFlags(part)...)
	}
	args = expanded
	masked = make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, inline := strings.Cut(a, "=")
		if !inline {
			if (a == "--header" || a == "--base-url") && i+1 < len(args) {
				value = args[i+1]
				i++
			} else {
				masked = append(masked, a)
				continue
			}
		}
		switch name {
		case "--header":
			h, err := ParseHeader(value)
			if err != nil || h.Credential() {
				if err == nil {
					headers = append(headers, h)
				}
				value = h.String()
			}
		case "--base-url":
			if len(urlSecrets(value)) > 0 {
				baseURL = value
				value = redact.URL(value)
			}
		default:
			masked = append(masked, a)
			continue
		}
		masked = append(masked, name+"="+value)
	}
	return masked, headers, baseURL
}

// splitAtDashes splits args at every "--".
func splitAtDashes(args []string) [][]string {
	parts := [][]string{nil}
	for _, a := range args {
		if a == "--" {
			parts = append(parts, nil)
			continue
		}
		parts[len(parts)-1] = append(parts[len(parts)-1], a)
	}
	return parts
}
