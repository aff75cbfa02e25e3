package redact

import (
	"bytes"
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func TestSplitHeaderAcceptsBothFormsAndHidesTheValue(t *testing.T) {
	tests := []struct{ in, name, value string }{
		{"Authorization: Bearer X=1", "Authorization", "Bearer X=1"},
		{"Authorization=Bearer X:1", "Authorization", "Bearer X:1"},
		{"X-A:b", "X-A", "b"},
	}
	for _, tt := range tests {
		name, value, err := SplitHeader(tt.in)
		if err != nil || name != tt.name || value != tt.value {
			t.Errorf("SplitHeader(%q) = %q, %q, %v", tt.in, name, value, err)
		}
	}
	for _, bad := range []string{"Bearer-sk-SECRET", "Bad Name: sk-SECRET", ": sk-SECRET"} {
		_, _, err := SplitHeader(bad)
		if err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("SplitHeader(%q) error %v: want an error without the value", bad, err)
		}
	}
}

func TestSecretsScrubTextErrorsAndStreams(t *testing.T) {
	secrets := []string{"Bearer sk-PLANTED", "key-PLANTED2", "sk-PLANTED", "pw-PLANTED3"}
	text := "sent Bearer sk-PLANTED; token sk-PLANTED alone; key-PLANTED2; pw-PLANTED3"
	if got := Text(text, secrets); strings.Contains(got, "PLANTED") {
		t.Errorf("Text left a secret: %q (secrets %q)", got, secrets)
	}
	err := Error(fmtErr("--header \"Authorization: Bearer sk-PLANTED\": bad", fs.ErrInvalid), secrets)
	if strings.Contains(err.Error(), "PLANTED") || !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("Error = %v, is ErrInvalid %v", err, errors.Is(err, fs.ErrInvalid))
	}
	var out bytes.Buffer
	w := NewWriter(&out, secrets)
	// The secret arrives split across writes and the last line has no newline.
	for _, chunk := range []string{"line one Bearer sk-PLA", "NTED end\nkey-PLAN", "TED2 tail"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "PLANTED") || !strings.HasSuffix(out.String(), "tail") {
		t.Errorf("writer output %q", out.String())
	}
}

type wrapped struct {
	msg string
	err error
}

func (w wrapped) Error() string { return w.msg }
func (w wrapped) Unwrap() error { return w.err }

func fmtErr(msg string, err error) error { return wrapped{msg, err} }

func TestURLMasksUserAndQueryCredentials(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgresql://tune:pw-PLANTED@db:5432/tune", "postgresql://tune:[REDACTED]@db:5432/tune"},
		{"postgresql://tune@db/tune?password=pw-PLANTED&sslmode=disable", "postgresql://tune@db/tune?password=[REDACTED]&sslmode=disable"},
		{"http://h:8000/v1?api_key=pw-PLANTED", "http://h:8000/v1?api_key=[REDACTED]"},
		{"postgresql://tune@db/tune?sslmode=disable", "postgresql://tune@db/tune?sslmode=disable"},
		{"plain.db", "plain.db"},
	}
	for _, tt := range tests {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
		secrets := URLSecrets(tt.in)
		if strings.Contains(tt.in, "PLANTED") != (len(secrets) == 1 && secrets[0] == "pw-PLANTED") {
			t.Errorf("URLSecrets(%q) = %q", tt.in, secrets)
		}
	}
}
