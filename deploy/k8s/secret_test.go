package k8s

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/servebench/servebench/runspec"
)

// planted are the secrets the tests give; none may appear in a printed
// manifest, in any encoding.
var planted = []string{"tok-PLANTED-1", "key-PLANTED-2", "pw-PLANTED-3", "pw-PLANTED-4"}

// assertNoSecret searches every byte of data for each secret, as typed,
// base64-encoded and URL-escaped.
func assertNoSecret(t *testing.T, what string, data []byte, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		for _, form := range []string{s, base64.StdEncoding.EncodeToString([]byte(s)), url.QueryEscape(s), strings.TrimSuffix(base64.StdEncoding.EncodeToString([]byte(s)), "=")} {
			if bytes.Contains(data, []byte(form)) {
				t.Errorf("%s holds the secret %q (as %q):\n%s", what, s, form, data)
			}
		}
	}
}

// podEnv is what a container's environment reads from secret: each
// secretKeyRef resolved as the kubelet would, an optional missing key
// left unset.
func podEnv(t *testing.T, c corev1.Container, secretName string, secret map[string]string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref == nil || ref.Name != secretName {
			t.Fatalf("env %s is not read from Secret %s: %+v", e.Name, secretName, e.ValueFrom)
		}
		v, ok := secret[ref.Key]
		if !ok {
			if ref.Optional == nil || !*ref.Optional {
				t.Fatalf("env %s needs key %s, which the Secret lacks (keys %v)", e.Name, ref.Key, keys(secret))
			}
			continue
		}
		env[e.Name] = v
	}
	return env
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func jobsOf(t *testing.T, data []byte) (cm *corev1.ConfigMap, jobs []*batchv1.Job) {
	t.Helper()
	for _, o := range decodeStrict(t, data) {
		switch o := o.(type) {
		case *corev1.ConfigMap:
			cm = o
		case *batchv1.Job:
			jobs = append(jobs, o)
		case *corev1.Secret:
			t.Fatalf("a Secret in the printed manifests: %+v", o)
		}
	}
	return cm, jobs
}

// TestBenchCredentialsGoIntoASecret: credential headers and a base URL's
// credentials reach neither the ConfigMap nor the Job; the shard pods read
// them from the Secret, and the spec they run has them back.
func TestBenchCredentialsGoIntoASecret(t *testing.T) {
	tests := []struct {
		name string
		args []string
		keys []string
	}{
		{"bearer header", []string{"--base-url", "http://vllm:8000", "--header", "Authorization: Bearer tok-PLANTED-1", "--header", "X-Run: 7"}, []string{"header-authorization"}},
		{"two credential headers, vLLM's form", []string{"--base-url", "http://vllm:8000", "--header", "X-Api-Key=key-PLANTED-2", "--header", "Cookie: s=tok-PLANTED-1"}, []string{"header-cookie", "header-x-api-key"}},
		{"URL password and query key", []string{"--base-url", "http://u:pw-PLANTED-3@vllm:8000/?api_key=pw-PLANTED-4"}, []string{"base-url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := benchSpec(t, tt.args...)
			b := Bench{Common: Common{Name: "run1", Image: "img"}, Shards: 3, Spec: spec, StartAt: time.Unix(1e9, 0),
				StorageSize: "1Gi", MergeDeadline: time.Hour}
			objs, err := b.Objects()
			if err != nil {
				t.Fatal(err)
			}
			data, err := YAML(objs)
			if err != nil {
				t.Fatal(err)
			}
			assertNoSecret(t, "printed manifests", data, planted)
			secret, err := b.Credentials()
			if err != nil || secret == nil {
				t.Fatalf("Credentials: %v, %v", secret, err)
			}
			if got := keys(secret.StringData); !slices.Equal(got, tt.keys) {
				t.Errorf("Secret keys %v, want %v", got, tt.keys)
			}
			cm, jobs := jobsOf(t, data)
			shard := jobs[0].Spec.Template.Spec.Containers[0]
			env := podEnv(t, shard, "run1-credentials", secret.StringData)
			back, err := runspec.ParseYAML([]byte(cm.Data["spec.yaml"]))
			if err != nil {
				t.Fatal(err)
			}
			if err := back.Validate(); err == nil {
				t.Error("the spec without its Secret validates: a masked value would be sent")
			}
			back.FillSecrets(lookupIn(env))
			if err := back.Validate(); err != nil {
				t.Fatalf("the pod's spec: %v", err)
			}
			if !slices.Equal(back.Args(), spec.Args()) {
				t.Errorf("the pod runs %q, want %q", back.Args(), spec.Args())
			}
			// The merge Job needs no credential.
			if env := jobs[1].Spec.Template.Spec.Containers[0].Env; len(env) != 0 {
				t.Errorf("merge env %+v", env)
			}
		})
	}
}

// TestTuneCredentialsGoIntoASecret: the storage password (in the URL's
// user part, as a query parameter or a key=value pair) and credential
// headers of the trials' load test stay out of the args and ConfigMap;
// the workers read them back from the Secret.
func TestTuneCredentialsGoIntoASecret(t *testing.T) {
	tests := []struct {
		name, storage, password, rest string
	}{
		{"URL user part", "postgresql://tune:pw-PLANTED-3@pg:5432/tune", "pw-PLANTED-3", "postgresql://tune@pg:5432/tune"},
		{"query parameter", "postgresql://tune@pg/tune?password=pw-PLANTED-3&sslmode=disable", "pw-PLANTED-3", "postgresql://tune@pg/tune?sslmode=disable"},
		{"key=value string", "host=pg dbname=tune user=tune password=pw-PLANTED-3", "pw-PLANTED-3", "host=pg dbname=tune user=tune"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flags := []string{"--trials", "8", "--target", "http://vllm:8000", "--", "--model", "m", "--header", "Authorization: Bearer tok-PLANTED-1", "X-Run=1"}
			tu := Tune{Common: Common{Name: "study", Image: "img"}, Workers: 2, ConcurrentTrials: 1, GPUsPerTrial: 1,
				Storage: tt.storage, Study: "s", StartupTimeout: time.Minute, Flags: flags}
			objs, err := tu.Objects()
			if err != nil {
				t.Fatal(err)
			}
			data, err := YAML(objs)
			if err != nil {
				t.Fatal(err)
			}
			assertNoSecret(t, "printed manifests", data, planted)
			secret, err := tu.Credentials()
			if err != nil || secret == nil {
				t.Fatalf("Credentials: %v, %v", secret, err)
			}
			cm, jobs := jobsOf(t, data)
			worker := jobs[0].Spec.Template.Spec.Containers[0]
			env := podEnv(t, worker, "study-credentials", secret.StringData)
			script := strings.Join(worker.Args, " ")
			if !strings.Contains(script, ShellJoin([]string{tt.rest})) {
				t.Errorf("worker command %q lacks --storage %q", script, tt.rest)
			}
			// PostgreSQL clients take the password from PGPASSWORD when
			// the connection string has none: the worker connects with it.
			t.Setenv("PGPASSWORD", env["PGPASSWORD"])
			cfg, err := pgconn.ParseConfig(tt.rest)
			if err != nil || cfg.Password != tt.password {
				t.Errorf("the worker's connection: password %q (%v), want the Secret's", cfg.Password, err)
			}
			// The load flags read back with the header from the Secret.
			words := shellWords(t, cm.Data[flagsKey])
			dash := slices.Index(words, "--")
			load, err := runspec.Parse(runspec.Bench, words[dash+1:])
			if err != nil {
				t.Fatal(err)
			}
			load.FillSecrets(lookupIn(env))
			want := []runspec.Header{{Name: "Authorization", Value: "Bearer tok-PLANTED-1"}, {Name: "X-Run", Value: "1"}}
			if !slices.Equal(load.Target.Headers, want) {
				t.Errorf("the workers' headers %+v, want %+v", load.Target.Headers, want)
			}
		})
	}
}

// TestExistingSecretIsReferencedNotPrinted: with --secret NAME nothing
// secret is printed or made; every key is read from the user's Secret,
// the optional ones optionally.
func TestExistingSecretIsReferencedNotPrinted(t *testing.T) {
	spec := benchSpec(t, "--base-url", "http://vllm:8000", "--header", "Authorization:")
	b := Bench{Common: Common{Name: "run1", Image: "img"}, Shards: 2, Spec: spec, StartAt: time.Unix(1e9, 0),
		StorageSize: "1Gi", MergeDeadline: time.Hour, Secret: "team-llm"}
	objs, err := b.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if s, err := b.Credentials(); s != nil || err != nil {
		t.Errorf("Credentials with --secret: %v %v, want none", s, err)
	}
	data, err := YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	cm, jobs := jobsOf(t, data)
	env := podEnv(t, jobs[0].Spec.Template.Spec.Containers[0], "team-llm", map[string]string{"header-authorization": "Bearer tok-PLANTED-1"})
	if _, ok := env[runspec.EnvOpenAIAPIKey]; ok {
		t.Errorf("OPENAI_API_KEY set from a key the Secret lacks")
	}
	back, err := runspec.ParseYAML([]byte(cm.Data["spec.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	back.FillSecrets(lookupIn(env))
	if h := back.Target.Headers; len(h) != 1 || h[0].Value != "Bearer tok-PLANTED-1" {
		t.Errorf("headers %+v", h)
	}

	tu := Tune{Common: Common{Name: "study", Image: "img"}, Workers: 1, ConcurrentTrials: 1, Storage: "postgresql://tune@pg/tune", Study: "s",
		StartupTimeout: time.Minute, Secret: "team-pg"}
	objs, err = tu.Objects()
	if err != nil {
		t.Fatal(err)
	}
	data, _ = YAML(objs)
	_, jobs = jobsOf(t, data)
	env = podEnv(t, jobs[0].Spec.Template.Spec.Containers[0], "team-pg", map[string]string{"pgpassword": "pw-PLANTED-3"})
	if env["PGPASSWORD"] != "pw-PLANTED-3" {
		t.Errorf("PGPASSWORD from the user's Secret: %q", env["PGPASSWORD"])
	}
}

func TestCredentialErrors(t *testing.T) {
	common := Common{Name: "ok", Image: "img"}
	_, err := Bench{Common: common, Shards: 1, StartAt: time.Unix(1e9, 0), StorageSize: "1Gi", MergeDeadline: time.Hour,
		Spec: benchSpec(t, "--base-url", "http://h:1", "--header", "Cookie: a=tok-PLANTED-1", "--header", "cookie: b=key-PLANTED-2")}.Objects()
	if err == nil || !strings.Contains(err.Error(), "Secret key header-cookie") || strings.Contains(err.Error(), "PLANTED") {
		t.Errorf("two Cookie headers: %v", err)
	}
	_, err = Tune{Common: common, Workers: 1, ConcurrentTrials: 1, Storage: "postgresql://x@y/z", StartupTimeout: time.Minute,
		Flags: []string{"--target", "http://u:pw-PLANTED-3@vllm:8000"}}.Objects()
	if err == nil || !strings.Contains(err.Error(), "--target") || strings.Contains(err.Error(), "PLANTED") {
		t.Errorf("--target with a password: %v", err)
	}
	_, err = Tune{Common: common, Workers: 1, ConcurrentTrials: 1, Storage: "host=db password=pw-PLANTED-3 nonsense", StartupTimeout: time.Minute}.Objects()
	if err == nil || strings.Contains(err.Error(), "PLANTED") {
		t.Errorf("storage that is neither: %v", err)
	}
}

// shellWords splits what ShellJoin wrote.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			cur.WriteByte(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
