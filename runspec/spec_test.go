package runspec

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// roundTripCases are command lines of every kind, with repeatable flags,
// secrets, unset-able sampling flags, negative numbers and values at
// their default given explicitly.
var roundTripCases = []struct {
	kind Kind
	args []string
}{
	{Bench, nil},
	{Bench, []string{"--base-url", "http://user:pw-secret@10.0.0.7:8000", "--num-prompts", "10", "--goodput", "ttft:500", "tpot:50",
		"--header", "Authorization: Bearer sk-123456", "--header", "X-Trace=a=b", "--top-k", "-1", "--temperature", "0",
		"--metadata", "gpu=H100", "token=tok-secret", "--request-rate", "inf", "--seed", "-3", "--disable-stream", "--connection-reuse=false",
		"--extra-body", `{"top_k": 5, "x": [1, 2]}`, "--label", "a b: c", "--shard", "1/4", "--result-dir", "out"}},
	{Bench, []string{"--num-prompts", "1000", "--backend", "openai"}}, // explicit defaults stay given
	{Sim, []string{"--model", "Qwen2-7B", "-tp", "2", "--enable-prefix-caching=false", "--vllm-version", "0.6.3",
		"--topology", "pd", "--prefill-tp", "2", "--kv-link-setup", "500us", "--gpu-memory-utilization", "0.85", "--throughput", "--random-lengths-from", "runs/vllm detailed.json"}},
	{Sim, []string{"--backend", "openai-chat", "--max-concurrency", "8"}},
	{Serve, []string{"--api-key", "key-secret-1", "--served-model-name", "a", "b", "--seed", "7", "--inter-token-latency", "12",
		"--time-to-first-token", "1.5s", "--kv-role", "consumer", "--port", "0"}},
}

func mustParse(t testing.TB, kind Kind, args []string) *Spec {
	t.Helper()
	s, err := Parse(kind, args)
	if err != nil {
		t.Fatalf("Parse(%s, %q): %v", kind, args, err)
	}
	return s
}

// TestArgsAndYAMLRoundTrip: a spec written back as arguments, or as YAML,
// reads back into the same spec, and writing that again gives the same
// text.
func TestArgsAndYAMLRoundTrip(t *testing.T) {
	for _, tc := range roundTripCases {
		t.Run(string(tc.kind)+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			s := mustParse(t, tc.kind, tc.args)
			args := s.Args()
			again := mustParse(t, tc.kind, args)
			if got := again.Args(); !slices.Equal(got, args) {
				t.Fatalf("args round trip:\n first %q\nsecond %q", args, got)
			}
			y, err := s.YAML(true)
			if err != nil {
				t.Fatal(err)
			}
			fromYAML, err := ParseYAML(y)
			if err != nil {
				t.Fatalf("%v\n%s", err, y)
			}
			if got := fromYAML.Args(); !slices.Equal(got, args) {
				t.Fatalf("YAML round trip:\n%s\n args %q\nwant %q", y, got, args)
			}
			y2, err := fromYAML.YAML(true)
			if err != nil || string(y2) != string(y) {
				t.Fatalf("YAML differs after a round trip (%v):\n%s\n---\n%s", err, y, y2)
			}
			for _, name := range []string{"num-prompts", "model", "api-key"} {
				if s.HasFlag(name) && s.Changed(name) != again.Changed(name) {
					t.Errorf("--%s given %v before, %v after", name, s.Changed(name), again.Changed(name))
				}
			}
		})
	}
}

func TestDefaultSpecWritesNothing(t *testing.T) {
	for _, kind := range []Kind{Bench, Sim, Serve} {
		if args := New(kind).Args(); len(args) != 0 {
			t.Errorf("%s defaults write %q", kind, args)
		}
		if err := New(kind).Validate(); err != nil {
			t.Errorf("%s defaults: %v", kind, err)
		}
	}
}

// TestSecretsNeverLeaveRedactedForms: headers, URL passwords, API keys
// and credential metadata are masked in RedactedArgs, YAML(false) and any
// %v of the spec, and listed by Secrets; Args keeps them for the run.
func TestSecretsNeverLeaveRedactedForms(t *testing.T) {
	const planted = "PLANTED"
	bench := mustParse(t, Bench, []string{"--base-url", "http://u:pw-" + planted + "@h:1", "--header", "Authorization: Bearer sk-" + planted,
		"--header", "sk-" + planted + "-bare", "--metadata", "api_token=t-" + planted, "--metadata", "gpu=A100"})
	bench.Env.OpenAIAPIKey = NewSecret("env-" + planted)
	serve := mustParse(t, Serve, []string{"--api-key", "key-" + planted})
	for _, s := range []*Spec{bench, serve} {
		y, err := s.YAML(false)
		if err != nil {
			t.Fatal(err)
		}
		for name, text := range map[string]string{
			"RedactedArgs": strings.Join(s.RedactedArgs(), " "), "YAML": string(y),
			"%+v of the sections": fmt.Sprintf("%+v %+v %+v", s.Target.Headers, s.Server, s.Env.OpenAIAPIKey),
		} {
			if strings.Contains(text, planted) {
				t.Errorf("%s %s shows a secret: %s", s.Kind, name, text)
			}
			if name != "%+v of the sections" && !strings.Contains(text, "[REDACTED]") {
				t.Errorf("%s %s does not show where it masked: %s", s.Kind, name, text)
			}
		}
		if !strings.Contains(strings.Join(s.Args(), " "), planted) {
			t.Errorf("%s Args lost the secret the run needs: %q", s.Kind, s.Args())
		}
	}
	secrets := strings.Join(bench.Secrets(), "|")
	for _, want := range []string{"pw-" + planted, "Bearer sk-" + planted, "sk-" + planted, "t-" + planted, "env-" + planted} {
		if !strings.Contains(secrets, want) {
			t.Errorf("Secrets() = %q lacks %q", secrets, want)
		}
	}
	if strings.Contains(secrets, "A100") {
		t.Errorf("Secrets() lists a plain metadata value: %q", secrets)
	}
	if err := bench.Validate(); err == nil || strings.Contains(err.Error(), planted) || !strings.Contains(err.Error(), "--header (item 2)") {
		t.Errorf("a bare token as --header: %v, want it refused by position without printing it", err)
	}
}

func TestParseRefusesUnknownFlagsNamingTheNearest(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		args []string
		want string
	}{
		{Bench, []string{"--num-promptz", "10"}, "bench has no flag --num-promptz: did you mean --num-prompts?"},
		{Sim, []string{"--max-num-seq", "8"}, "did you mean --max-num-seqs?"},
		{Bench, []string{"--max-num-seqs", "8"}, "bench has no flag --max-num-seqs"},
		{Bench, []string{"positional"}, `unexpected argument "positional"`},
	} {
		_, err := Parse(tc.kind, tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%s, %q) = %v, want one line containing %q", tc.kind, tc.args, err, tc.want)
		}
	}
}

// TestSetAndClone: Set applies one flag as the command line would,
// Clone is independent of its original.
func TestSetAndClone(t *testing.T) {
	s := mustParse(t, Bench, []string{"--header", "A: 1", "--num-prompts", "5"})
	c := s.Clone()
	if err := c.Set("request-rate", "2.5"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("header", "B: 2"); err != nil {
		t.Fatal(err)
	}
	if c.Workload.RequestRate != 2.5 || len(c.Target.Headers) != 1 || c.Target.Headers[0].Name != "B" {
		t.Fatalf("after Set: rate %v headers %v", c.Workload.RequestRate, c.Target.Headers)
	}
	if s.Workload.RequestRate == 2.5 || s.Target.Headers[0].Name != "A" || s.Changed("request-rate") {
		t.Fatalf("Set on a clone changed the original: rate %v headers %v", s.Workload.RequestRate, s.Target.Headers)
	}
	if err := c.Set("num-promptz", "3"); err == nil || !strings.Contains(err.Error(), "did you mean --num-prompts") {
		t.Errorf("Set of an unknown flag: %v", err)
	}
	if err := c.Set("num-prompts", "many"); err == nil || !strings.Contains(err.Error(), `--num-prompts "many"`) {
		t.Errorf("Set of a bad value: %v", err)
	}
}

// TestHelpShowsNoSentinels: unset sampling flags show no default, not the
// sentinel that stood for "unset".
func TestHelpShowsNoSentinels(t *testing.T) {
	fs := newFlagSet("bench")
	New(Bench).Register(fs)
	usage := fs.FlagUsages()
	for _, bad := range []string{"(default NaN)", "(default -2)", "(default -1)", "--shard servebench merge"} {
		if strings.Contains(usage, bad) {
			t.Errorf("bench help shows %q", bad)
		}
	}
	if !strings.Contains(usage, "--shard I/N") {
		t.Errorf("bench help does not name --shard's value I/N:\n%s", usage)
	}
}

func TestStartAtInThePast(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at      string
		wantErr string
	}{
		{"2026-05-01T12:03:00Z", ""},
		{"2026-05-01T11:59:30Z", ""}, // a pod a little late still runs
		{"2019-05-01T12:00:00Z", "--start-at 2019-05-01T12:00:00Z is 61368h0m0s in the past"},
		{"noon", `--start-at "noon": not an RFC3339 instant`},
	} {
		s := mustParse(t, Bench, []string{"--shard", "0/2", "--result-dir", t.TempDir(), "--start-at", tc.at})
		s.Env.Now = func() time.Time { return now }
		err := s.Validate()
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("--start-at %s: %v, want %q", tc.at, err, tc.wantErr)
		}
	}
}

// FuzzParseArgs: whatever Parse accepts, Args writes back as a command
// line Parse reads into the same spec.
func FuzzParseArgs(f *testing.F) {
	for _, tc := range roundTripCases {
		f.Add(string(tc.kind), strings.Join(tc.args, "\x00"))
	}
	f.Fuzz(func(t *testing.T, kind, joined string) {
		k := Kind(kind)
		if k != Bench && k != Sim && k != Serve {
			return
		}
		s, err := Parse(k, strings.Split(joined, "\x00"))
		if err != nil {
			return
		}
		args := s.Args()
		again, err := Parse(k, args)
		if err != nil {
			t.Fatalf("Args %q do not parse: %v", args, err)
		}
		if got := again.Args(); !slices.Equal(got, args) {
			t.Fatalf("round trip:\n first %q\nsecond %q", args, got)
		}
	})
}

// FuzzParseYAML: ParseYAML never panics, and what it accepts writes back
// as YAML that reads into the same spec.
func FuzzParseYAML(f *testing.F) {
	for _, tc := range roundTripCases {
		s := mustParse(f, tc.kind, tc.args)
		y, err := s.YAML(true)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(y)
	}
	f.Add([]byte("kind: sim\nworkload: {request-rate: .inf, goodput: [ttft:1]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseYAML(data)
		if err != nil {
			return
		}
		y, err := s.YAML(true)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseYAML(y)
		if err != nil {
			t.Fatalf("written YAML does not parse: %v\n%s", err, y)
		}
		if !slices.Equal(again.Args(), s.Args()) {
			t.Fatalf("YAML round trip: %q, want %q", again.Args(), s.Args())
		}
	})
}

// FuzzRedactedArgsNeverLeakAHeaderValue: whatever a --header holds, the
// masked forms of a spec never show a credential header's value.
func FuzzRedactedArgsNeverLeakAHeaderValue(f *testing.F) {
	f.Add("Authorization", "Bearer abcdefgh", true)
	f.Add("X-Api-Key", "k:=v", false)
	f.Fuzz(func(t *testing.T, name, value string, colon bool) {
		sep := "="
		if colon {
			sep = ": "
		}
		item := name + sep + value
		s, err := Parse(Bench, []string{"--header", item})
		if err != nil || s.Validate() != nil {
			return
		}
		h := s.Target.Headers[0]
		if !h.Credential() || len(strings.TrimSpace(h.Value)) < minSecretLen {
			return
		}
		y, err := s.YAML(false)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{strings.Join(s.RedactedArgs(), " "), string(y), fmt.Sprint(s.Target.Headers)} {
			masked := strings.ReplaceAll(text, "[REDACTED]", "")
			if strings.Contains(masked, h.Value) && !strings.Contains(h.Name, h.Value) && !strings.Contains("--header=", h.Value) {
				t.Errorf("masked form %q shows the value %q of %q", text, h.Value, item)
			}
		}
	})
}

// TestRedactedArgsMaskCredentials: credential header values (either form,
// inline or not), unparsable headers, credential-named metadata and URL
// passwords are masked; harmless headers, metadata and other flags stay.
func TestRedactedArgsMaskCredentials(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"equals form", []string{"--header", "Authorization=Bearer sk-123456"}, []string{"--header=Authorization: [REDACTED]"}},
		{"colon form", []string{"--header", "Authorization: Bearer sk-123456"}, []string{"--header=Authorization: [REDACTED]"}},
		{"inline flag", []string{"--header=X-Api-Key: abcdef"}, []string{"--header=X-Api-Key: [REDACTED]"}},
		{"cookie and token", []string{"--header", "Cookie=session=1", "--header", "X-Auth-Token=zzzz"}, []string{"--header=Cookie: [REDACTED]", "--header=X-Auth-Token: [REDACTED]"}},
		{"harmless header kept", []string{"--header", "X-Request-Source=ci"}, []string{"--header=X-Request-Source: ci"}},
		{"unparsable header masked whole", []string{"--header", "Bearer sk-123456"}, []string{"--header=[REDACTED]"}},
		{"credential metadata", []string{"--metadata", "api_key=abcd", "--metadata", "gpu=h100"}, []string{"--metadata=api_key=[REDACTED]", "--metadata=gpu=h100"}},
		{"URL password", []string{"--base-url", "http://user:hunter22@127.0.0.1:8000"}, []string{"--base-url=http://user:[REDACTED]@127.0.0.1:8000"}},
		{"URL query password", []string{"--base-url", "http://127.0.0.1:8000/?api_key=hunter22&x=1"}, []string{"--base-url=http://127.0.0.1:8000/?api_key=[REDACTED]&x=1"}},
		{"other flags untouched", []string{"--num-prompts", "10", "--model", "m"}, []string{"--model=m", "--num-prompts=10"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustParse(t, Bench, tt.in).RedactedArgs()
			if !slices.Equal(got, tt.want) {
				t.Errorf("RedactedArgs of %q = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestMaskedSecretsAreNotSent: a spec read back from its masked YAML (a
// sweep point's spec.yaml) is refused until the real secrets are given.
func TestMaskedSecretsAreNotSent(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		args []string
		want string
	}{
		{Bench, []string{"--header", "Authorization: Bearer sk-1234"}, "--header Authorization: its value is the mask"},
		{Serve, []string{"--api-key", "key-1234"}, "--api-key is the mask"},
	} {
		y, err := mustParse(t, tc.kind, tc.args).YAML(false)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseYAML(y)
		if err != nil {
			t.Fatal(err)
		}
		if err := back.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s spec from masked YAML: %v, want %q", tc.kind, err, tc.want)
		}
	}
}

// sim's --backend names the API as bench's does: a chat backend has the
// server prepare each request's chat template; an unknown name, or a chat
// API in the offline throughput benchmark, is refused in one line.
func TestSimBackendFlag(t *testing.T) {
	tests := []struct {
		args     []string
		wantChat bool
		wantErr  string
	}{
		{nil, false, ""},
		{[]string{"--backend", "vllm"}, false, ""},
		{[]string{"--backend", "openai-chat"}, true, ""},
		{[]string{"--backend", "tgi"}, true, ""},
		{[]string{"--backend", "gemini"}, false, `--backend "gemini": not supported; use one of openai, vllm`},
		{[]string{"--backend", "openai-chat", "--throughput"}, false, "--backend openai-chat with --throughput: the offline throughput benchmark calls no API"},
		{[]string{"--backend", "openai-chat", "--topology", "colocated", "--replicas", "2"}, false, "--backend openai-chat with --topology: the chat preparation of a fleet's API servers is not modelled"},
		{[]string{"--num-scheduler-steps", "8", "--vllm-version", "0.6.3", "--topology", "colocated", "--replicas", "2"}, false, "--num-scheduler-steps 8 with --topology: a fleet's engines run single steps"},
		{[]string{"--num-scheduler-steps", "8", "--vllm-version", "0.6.3"}, false, ""},
	}
	for _, tt := range tests {
		s, err := Parse(Sim, tt.args)
		if err == nil {
			err = s.Validate()
		}
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%q: error %v, want one line containing %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		if got := s.Simulation.Chat(); got != tt.wantChat {
			t.Errorf("%q: Chat() %v, want %v", tt.args, got, tt.wantChat)
		}
	}
}
