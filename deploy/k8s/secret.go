package k8s

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/servebench/servebench/internal/redact"
	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/tune"
)

// Keys of the credentials Secret. A Secret the user already has (--secret
// NAME) holds the ones the run needs:
//
//	header-<name>   the value of each credential --header, the name in
//	                lower case (header-authorization, header-x-api-key)
//	base-url        --base-url, when it carries a password or key
//	pgpassword      tune: the PostgreSQL password (optional)
//	openai-api-key  bench: OPENAI_API_KEY, sent as a bearer token (optional)
//
// The pods read each as an environment variable (secretKeyRef): the run
// spec's HeaderEnvVar and EnvBaseURL, PGPASSWORD (which PostgreSQL
// clients read when the connection string has no password) and
// OPENAI_API_KEY. The printed manifests and ConfigMaps never hold a value.
const (
	SecretKeyBaseURL    = "base-url"
	SecretKeyPGPassword = "pgpassword"
	SecretKeyOpenAI     = "openai-api-key"
	envPGPassword       = "PGPASSWORD"
)

// HeaderSecretKey is the Secret key holding the value of the header name:
// "header-" and the name in lower case, any character a key cannot hold
// as '_'.
func HeaderSecretKey(name string) string {
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			b[i] = '_'
		}
	}
	return "header-" + string(b)
}

// credentials are what a run's pods need but no manifest may show.
type credentials struct {
	headers []runspec.Header
	baseURL string
	// storage is tune's --storage without its password, which goes in
	// storagePassword.
	storage, storagePassword string
	tune                     bool
}

func (c credentials) empty() bool {
	return len(c.headers) == 0 && c.baseURL == "" && c.storagePassword == ""
}

// data is the Secret's content.
func (c credentials) data() map[string]string {
	d := map[string]string{}
	for _, h := range c.headers {
		d[HeaderSecretKey(h.Name)] = h.Value
	}
	if c.baseURL != "" {
		d[SecretKeyBaseURL] = c.baseURL
	}
	if c.storagePassword != "" {
		d[SecretKeyPGPassword] = c.storagePassword
	}
	return d
}

// env reads each credential from the Secret into the variable the pod's
// run reads it from. With the user's own Secret the optional keys are
// read too, when present.
func (c credentials) env(secret string, existing bool) []corev1.EnvVar {
	ref := func(name, key string, optional bool) corev1.EnvVar {
		sel := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}
		if optional {
			sel.Optional = ptr(true)
		}
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: sel}}
	}
	var env []corev1.EnvVar
	for _, h := range c.headers {
		env = append(env, ref(runspec.HeaderEnvVar(h.Name), HeaderSecretKey(h.Name), false))
	}
	if c.baseURL != "" {
		env = append(env, ref(runspec.EnvBaseURL, SecretKeyBaseURL, false))
	}
	switch {
	case c.storagePassword != "":
		env = append(env, ref(envPGPassword, SecretKeyPGPassword, false))
	case existing && c.tune:
		env = append(env, ref(envPGPassword, SecretKeyPGPassword, true))
	}
	if existing {
		env = append(env, ref(runspec.EnvOpenAIAPIKey, SecretKeyOpenAI, true))
	}
	return env
}

// checkHeaders refuses two credential headers one Secret key would hold.
func checkHeaders(headers []runspec.Header) error {
	seen := map[string]string{}
	for _, h := range headers {
		key := HeaderSecretKey(h.Name)
		if prev, ok := seen[key]; ok {
			return fmt.Errorf("--header %s and --header %s: both would be Secret key %s; give each credential header once", prev, h.Name, key)
		}
		seen[key] = h.Name
	}
	return nil
}

func (b Bench) credentials() (credentials, error) {
	c := credentials{headers: b.Spec.CredentialHeaders()}
	if b.Spec.BaseURLHasSecrets() {
		c.baseURL = b.Spec.Target.BaseURL
	}
	return c, checkHeaders(c.headers)
}

// credentials masks the workers' flags and takes the storage's password
// out of --storage.
func (t Tune) credentials() ([]string, credentials, error) {
	rest, password, err := tune.SplitStoragePassword(t.Storage)
	if err != nil {
		return nil, credentials{}, fmt.Errorf("--storage: workers in several pods share a study only in PostgreSQL; give postgresql://USER@HOST/DB or host=HOST dbname=DB user=USER (%w)", err)
	}
	for i, f := range t.Flags {
		if f == "--" {
			break
		}
		target, ok := strings.CutPrefix(f, "--target=")
		if f == "--target" && i+1 < len(t.Flags) {
			target, ok = t.Flags[i+1], true
		}
		if ok && len(redact.URLSecrets(target)) > 0 {
			return nil, credentials{}, fmt.Errorf("tune flag --target %s: a credential in the URL would reach the ConfigMap; send it as a --header after the second -- (it goes into the Secret)", redact.URL(target))
		}
	}
	flags, headers, baseURL := runspec.MaskArgs(t.Flags)
	c := credentials{headers: headers, baseURL: baseURL, storage: rest, storagePassword: password, tune: true}
	return flags, c, checkHeaders(headers)
}

func (c Common) credentialsName() string { return c.Name + "-credentials" }

func (b Bench) secretName() string {
	if b.Secret != "" {
		return b.Secret
	}
	return b.credentialsName()
}

func (t Tune) secretName() string {
	if t.Secret != "" {
		return t.Secret
	}
	return t.credentialsName()
}

// Credentials is the Secret the manifests read the run's credentials
// from, to be written where only its owner reads it and applied before
// them; nil when the run has none or names its own Secret.
func (b Bench) Credentials() (*corev1.Secret, error) {
	if b.Spec == nil {
		return nil, nil
	}
	c, err := b.credentials()
	if err != nil || b.Secret != "" || c.empty() {
		return nil, err
	}
	return b.secretObject(c), nil
}

// Credentials is the workers' Secret (see Bench.Credentials).
func (t Tune) Credentials() (*corev1.Secret, error) {
	_, c, err := t.credentials()
	if err != nil || t.Secret != "" || c.empty() {
		return nil, err
	}
	return t.secretObject(c), nil
}

func (c Common) secretObject(creds credentials) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: c.meta("-credentials", "credentials"),
		Type:       corev1.SecretTypeOpaque,
		StringData: creds.data(),
	}
}

// CredentialNames lists the run's credentials for a message (never their
// values): "--header Authorization", "--base-url", "--storage password".
func (b Bench) CredentialNames() []string {
	c, _ := b.credentials()
	return c.names()
}

// CredentialNames lists the workers' credentials (see Bench's).
func (t Tune) CredentialNames() []string {
	_, c, _ := t.credentials()
	return c.names()
}

func (c credentials) names() []string {
	var out []string
	for _, h := range c.headers {
		out = append(out, "--header "+h.Name+" (key "+HeaderSecretKey(h.Name)+")")
	}
	if c.baseURL != "" {
		out = append(out, "--base-url (key "+SecretKeyBaseURL+")")
	}
	if c.storagePassword != "" {
		out = append(out, "the --storage password (key "+SecretKeyPGPassword+")")
	}
	return out
}
