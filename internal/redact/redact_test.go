package redact

import (
	"bytes"
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func TestArgsMasksCredentials(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"equals form", []string{"--header", "Authorization=Bearer sk-123456"}, []string{"--header", "Authorization=" + Mask}},
		{"colon form", []string{"--header", "Authorization: Bearer sk-123456"}, []string{"--header", "Authorization: " + Mask}},
		{"inline flag", []string{"--header=X-Api-Key: abcdef"}, []string{"--header=X-Api-Key: " + Mask}},
		{"cookie and token", []string{"--header", "Cookie=session=1", "--header", "X-Auth-Token=zzzz"}, []string{"--header", "Cookie=" + Mask, "--header", "X-Auth-Token=" + Mask}},
		{"harmless header kept", []string{"--header", "X-Request-Source=ci"}, []string{"--header", "X-Request-Source=ci"}},
		{"unparsable header masked whole", []string{"--header", "Bearer sk-123456"}, []string{"--header", Mask}},
		{"credential metadata", []string{"--metadata", "api_key=abcd", "--metadata", "gpu=h100"}, []string{"--metadata", "api_key=" + Mask, "--metadata", "gpu=h100"}},
		{"URL password", []string{"--base-url", "http://user:hunter22@127.0.0.1:8000"}, []string{"--base-url", "http://user:xxxxx@127.0.0.1:8000"}},
		{"other flags untouched", []string{"--num-prompts", "10", "--model", "m"}, []string{"--num-prompts", "10", "--model", "m"}},
		{"dangling flag", []string{"--header"}, []string{"--header"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Args(tt.in)
			if strings.Join(got, "\x00") != strings.Join(tt.want, "\x00") {
				t.Errorf("Args(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestMetadataArgsKeepsHeaders(t *testing.T) {
	in := []string{"--header", "Authorization=Bearer abcd", "--metadata=token=abcd", "--metadata", "gpu=h100"}
	want := []string{"--header", "Authorization=Bearer abcd", "--metadata=token=" + Mask, "--metadata", "gpu=h100"}
	if got := MetadataArgs(in); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("MetadataArgs = %q, want %q", got, want)
	}
}

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
	args := []string{"--header", "Authorization: Bearer sk-PLANTED", "--header=X-Api-Key=key-PLANTED2", "--base-url", "http://u:pw-PLANTED3@h"}
	secrets := Secrets(args)
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

func FuzzArgsNeverLeaksAHeaderValue(f *testing.F) {
	f.Add("Authorization", "Bearer abcdefgh", true)
	f.Add("X-Api-Key", "k:=v", false)
	f.Fuzz(func(t *testing.T, name, value string, colon bool) {
		sep := "="
		if colon {
			sep = ": "
		}
		header := name + sep + value
		got := strings.Join(Args([]string{"--header", header}), " ")
		gotName, gotValue, err := SplitHeader(header)
		leaks := err == nil && IsCredentialName(gotName) || err != nil
		if leaks && len(gotValue) >= minSecretLen && strings.Contains(got, gotValue) && !strings.Contains(Mask, gotValue) && !strings.Contains(gotName, gotValue) {
			t.Errorf("Args kept the value %q of %q: %q", gotValue, header, got)
		}
	})
}
