package runspec

import (
	"slices"
	"strings"
	"testing"
)

// TestSecretsComeBackFromTheEnvironment: a spec written masked (a pod's
// ConfigMap) gets each masked secret from its variable, and only those.
func TestSecretsComeBackFromTheEnvironment(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		want   []string // Args after FillSecrets
		refuse string   // Validate's error without env
	}{
		{"bearer header", []string{"--header", "Authorization: Bearer sk-1234", "--header", "X-Run: 1"},
			map[string]string{"SERVEBENCH_HEADER_AUTHORIZATION": "Bearer sk-1234"},
			[]string{"--header=Authorization: Bearer sk-1234", "--header=X-Run: 1"}, "$SERVEBENCH_HEADER_AUTHORIZATION"},
		{"dashed header name", []string{"--header", "X-Api-Key=k-1234"},
			map[string]string{"SERVEBENCH_HEADER_X_API_KEY": "k-1234"},
			[]string{"--header=X-Api-Key: k-1234"}, "$SERVEBENCH_HEADER_X_API_KEY"},
		{"base URL with a password", []string{"--base-url", "http://u:pw-1234@h:8000"},
			map[string]string{EnvBaseURL: "http://u:pw-1234@h:8000"},
			[]string{"--base-url=http://u:pw-1234@h:8000"}, "$" + EnvBaseURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y, err := mustParse(t, Bench, tt.args).YAML(false)
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseYAML(y)
			if err != nil {
				t.Fatal(err)
			}
			back.FillSecrets(func(string) (string, bool) { return "", false })
			if err := back.Validate(); err == nil || !strings.Contains(err.Error(), tt.refuse) {
				t.Errorf("without the environment: %v, want a refusal naming %s", err, tt.refuse)
			}
			back.FillSecrets(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if err := back.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := back.Args(); !slices.Equal(got, tt.want) {
				t.Errorf("Args %q, want %q", got, tt.want)
			}
		})
	}
	// A value given on the command line is never replaced.
	s := mustParse(t, Bench, []string{"--header", "Authorization: Bearer mine"})
	s.FillSecrets(func(string) (string, bool) { return "Bearer env", true })
	if s.Target.Headers[0].Value != "Bearer mine" {
		t.Errorf("FillSecrets replaced a given value: %+v", s.Target.Headers)
	}
}

func TestMaskArgsMasksEveryCommandsSecrets(t *testing.T) {
	args := []string{"--trials", "4", "--", "--model", "m", "--header", "Authorization: Bearer sk-1234", "Cookie=c-5678", "X-Run=1",
		"--base-url=http://u:pw-9012@h:1", "--header=X-Api-Key: k-3456"}
	masked, headers, baseURL := MaskArgs(args)
	joined := strings.Join(masked, " ")
	for _, secret := range []string{"sk-1234", "c-5678", "pw-9012", "k-3456"} {
		if strings.Contains(joined, secret) {
			t.Errorf("masked args %q hold %s", joined, secret)
		}
	}
	want := []string{"--trials", "4", "--", "--model", "m", "--header=Authorization: [REDACTED]", "--header=Cookie: [REDACTED]",
		"--header=X-Run=1", "--base-url=http://u:[REDACTED]@h:1", "--header=X-Api-Key: [REDACTED]"}
	if !slices.Equal(masked, want) {
		t.Errorf("MaskArgs = %q, want %q", masked, want)
	}
	if len(headers) != 3 || headers[0].Value != "Bearer sk-1234" || headers[2].Name != "X-Api-Key" || baseURL != "http://u:pw-9012@h:1" {
		t.Errorf("secrets %+v %q", headers, baseURL)
	}
}
