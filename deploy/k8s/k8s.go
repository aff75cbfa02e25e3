// Package k8s builds Kubernetes manifests for sharded benchmarks and
// distributed tune workers from the official API types, so every field
// name and value kind is checked by the compiler rather than a template.
package k8s

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/servebench/servebench/runspec"
)

// Environment the bench shards read (runspec.Env): the Job sets
// JOB_COMPLETION_INDEX, the pod spec the count.
const (
	EnvShardCount = runspec.EnvShardCount
	// GPUResource is the extended resource of NVIDIA's device plugin.
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
)

const (
	flagsMount   = "/etc/servebench"
	flagsKey     = "flags"
	specKey      = "spec.yaml"
	recordsMount = "/records"
)

// Common is what every manifest shares.
type Common struct {
	Name      string // prefix of every object's name
	Namespace string
	Image     string // must contain servebench and a POSIX /bin/sh
}

func (c Common) check() error {
	if errs := validation.IsDNS1123Label(c.Name); len(errs) > 0 {
		return fmt.Errorf("--name %q: %s", c.Name, strings.Join(errs, "; "))
	}
	if c.Namespace != "" {
		if errs := validation.IsDNS1123Label(c.Namespace); len(errs) > 0 {
			return fmt.Errorf("--namespace %q: %s", c.Namespace, strings.Join(errs, "; "))
		}
	}
	if c.Image == "" {
		return errors.New("--image: give the container image holding servebench")
	}
	return nil
}

func (c Common) meta(suffix, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: c.Name + suffix, Namespace: c.Namespace, Labels: map[string]string{
		"app.kubernetes.io/name": "servebench", "app.kubernetes.io/instance": c.Name, "app.kubernetes.io/component": component,
	}}
}

// Bench is a sharded benchmark: an Indexed Job of Shards pods, each
// running one shard, and a merge Job that waits for every shard's
// manifest on the shared volume.
type Bench struct {
	Common
	Shards int
	// Spec is the bench run every shard runs its part of (workload,
	// target, seed), handed to the pods as YAML in a ConfigMap; the shard,
	// --start-at and --result-dir are set here.
	Spec    *runspec.Spec
	StartAt time.Time
	// Claim is an existing ReadWriteMany PersistentVolumeClaim; empty
	// creates one of StorageSize in StorageClass.
	Claim, StorageClass, StorageSize string
	// MergeDeadline bounds how long the merge Job waits for the shards.
	MergeDeadline time.Duration
	CPU, Memory   string // per shard pod requests (and limits)
	// Secret names an existing Secret holding the run's credentials under
	// the keys SecretKeys lists; empty: the credentials go into the
	// Secret that Credentials returns, NAME-credentials.
	Secret string
}

// Tune is a tune worker Job: Workers pods claim trials of one study in
// shared PostgreSQL until its budget is used.
type Tune struct {
	Common
	Workers, ConcurrentTrials, GPUsPerTrial int
	Storage, Study                          string
	// Flags are tune's flags and, after "--", the engine and workload
	// flags; the worker flags are set here.
	Flags []string
	// StartupTimeout is how long a trial's server may take to become
	// ready on its health path before the trial fails.
	StartupTimeout time.Duration
	// Secret names an existing Secret holding the credentials (see
	// Bench.Secret).
	Secret string
}

// Objects returns the bench run's objects in apply order.
func (b Bench) Objects() ([]runtime.Object, error) {
	if err := b.checkSharded(); err != nil {
		return nil, err
	}
	runDir := recordsMount + "/" + b.Name
	var objs []runtime.Object
	claim := b.Claim
	if claim == "" {
		pvc, err := b.recordsClaim()
		if err != nil {
			return nil, err
		}
		objs = append(objs, pvc)
		claim = pvc.Name
	}
	// The spec masks its secrets; the pods read them from the Secret.
	spec, err := b.Spec.YAML(false)
	if err != nil {
		return nil, err
	}
	creds, err := b.credentials()
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: b.meta("-flags", "flags"),
		Data: map[string]string{
			specKey:    string(spec),
			"start-at": b.StartAt.UTC().Format(time.RFC3339Nano),
			"shards":   strconv.Itoa(b.Shards),
		},
	}
	objs = append(objs, cm)
	volumes := []corev1.Volume{
		{Name: "flags", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}},
		{Name: "records", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}},
	}
	mounts := []corev1.VolumeMount{{Name: "flags", MountPath: flagsMount, ReadOnly: true}, {Name: "records", MountPath: recordsMount}}
	resources, err := podResources(b.CPU, b.Memory)
	if err != nil {
		return nil, err
	}
	shard := b.shardJob(runDir, volumes, mounts, resources, creds.env(b.secretName(), b.Secret != ""))
	merge, err := b.mergeJob(runDir, volumes, mounts)
	if err != nil {
		return nil, err
	}
	return append(objs, shard, merge), nil
}

// checkSharded refuses a bench run the manifests cannot shard.
func (b Bench) checkSharded() error {
	if err := b.check(); err != nil {
		return err
	}
	if b.Shards < 1 {
		return fmt.Errorf("--shards %d: need at least 1", b.Shards)
	}
	if b.StartAt.IsZero() {
		return errors.New("--start-at: every shard needs one shared start instant")
	}
	if b.Spec == nil || b.Spec.Kind != runspec.Bench {
		return errors.New("k8s: a sharded benchmark needs a bench run spec")
	}
	for _, own := range []string{"shard", "shards", "local", "start-at", "result-dir", "records"} {
		if b.Spec.Changed(own) {
			return fmt.Errorf("bench flag --%s: the manifests set it for every shard; drop it", own)
		}
	}
	if !b.Spec.Target.Explicit(b.Spec.Changed) {
		return errors.New("bench flags: give the server with --base-url (or --host and --port) after --; without one each pod would benchmark its own emulated server")
	}
	if err := b.Spec.Validate(); err != nil {
		return fmt.Errorf("bench flags: %w", err)
	}
	return nil
}

// recordsClaim is the shared volume every shard writes its records to,
// when no existing claim is given.
func (b Bench) recordsClaim() (*corev1.PersistentVolumeClaim, error) {
	size, err := resource.ParseQuantity(b.StorageSize)
	if err != nil {
		return nil, fmt.Errorf("--storage-size %q: %w", b.StorageSize, err)
	}
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: b.meta("-records", "records"),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	if b.StorageClass != "" {
		pvc.Spec.StorageClassName = &b.StorageClass
	}
	return pvc, nil
}

// shardJob runs every shard as one indexed Job.
func (b Bench) shardJob(runDir string, volumes []corev1.Volume, mounts []corev1.VolumeMount, resources corev1.ResourceRequirements, env []corev1.EnvVar) *batchv1.Job {
	n := int32(b.Shards)
	indexed := batchv1.IndexedCompletion
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: b.meta("-shards", "shard"),
		Spec: batchv1.JobSpec{
			CompletionMode: &indexed, Completions: &n, Parallelism: &n,
			// A retried shard would start after --start-at and send its
			// overdue requests at once; merge reports it as missing instead.
			BackoffLimit: ptr(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: b.meta("", "shard").Labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Volumes:       volumes,
					Containers: []corev1.Container{{
						Name: "shard", Image: b.Image, Command: []string{"/bin/sh", "-c"},
						// Every shard runs the one spec; the shard comes from
						// the environment.
						Args: []string{fmt.Sprintf(`mkdir -p %s && exec servebench bench --spec %s/%s --start-at "$(cat %s/start-at)" --result-dir %s --disable-tqdm`,
							runDir, flagsMount, specKey, flagsMount, runDir)},
						Env:          append([]corev1.EnvVar{{Name: EnvShardCount, Value: strconv.Itoa(b.Shards)}}, env...),
						VolumeMounts: mounts,
						Resources:    resources,
					}},
				},
			},
		},
	}
}

// mergeJob merges the shards' records once every shard has finished.
func (b Bench) mergeJob(runDir string, volumes []corev1.Volume, mounts []corev1.VolumeMount) (*batchv1.Job, error) {
	deadline := int64(b.MergeDeadline / time.Second)
	if deadline <= 0 {
		return nil, fmt.Errorf("--merge-deadline %s: must be positive", b.MergeDeadline)
	}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: b.meta("-merge", "merge"),
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr(int32(2)),
			ActiveDeadlineSeconds: &deadline,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: b.meta("", "merge").Labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Volumes:       volumes,
					// Every shard writes its manifest when it finishes, so
					// N manifests mean every shard is done.
					InitContainers: []corev1.Container{{
						Name: "wait-for-shards", Image: b.Image, Command: []string{"/bin/sh", "-c"},
						Args:         []string{fmt.Sprintf(`until [ "$(ls %s/*.shard.json 2>/dev/null | wc -l)" -ge %d ]; do sleep 5; done`, runDir, b.Shards)},
						VolumeMounts: mounts,
					}},
					Containers: []corev1.Container{{
						Name: "merge", Image: b.Image,
						Command:      []string{"servebench", "merge", "--save-result", "--result-dir", runDir + "/merged", runDir},
						VolumeMounts: mounts,
					}},
				},
			},
		},
	}, nil
}

// Objects returns the tune workers' objects in apply order.
func (t Tune) Objects() ([]runtime.Object, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	switch {
	case t.Workers < 1:
		return nil, fmt.Errorf("--workers %d: need at least 1", t.Workers)
	case t.ConcurrentTrials < 1:
		return nil, fmt.Errorf("--concurrent-trials %d: need at least 1", t.ConcurrentTrials)
	case t.GPUsPerTrial < 0:
		return nil, fmt.Errorf("--gpus-per-trial %d: must not be negative", t.GPUsPerTrial)
	case t.StartupTimeout <= 0:
		return nil, fmt.Errorf("--startup-timeout %s: must be positive", t.StartupTimeout)
	}
	for _, f := range t.Flags {
		for _, own := range []string{"--storage", "--study", "--worker", "--concurrent-trials", "--gpus-per-trial", "--startup-timeout"} {
			if f == own || strings.HasPrefix(f, own+"=") {
				return nil, fmt.Errorf("tune flag %s: the manifests set it for every worker; drop it", own)
			}
		}
	}
	flags, creds, err := t.credentials()
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: t.meta("-flags", "flags"),
		Data:       map[string]string{flagsKey: ShellJoin(flags) + "\n"},
	}
	m := int32(t.Workers)
	var resources corev1.ResourceRequirements
	if gpus := t.GPUsPerTrial * t.ConcurrentTrials; gpus > 0 {
		q := *resource.NewQuantity(int64(gpus), resource.DecimalSI)
		resources.Limits = corev1.ResourceList{GPUResource: q}
	}
	own := ShellJoin([]string{"--storage", creds.storage, "--study", t.Study, "--worker",
		"--concurrent-trials", strconv.Itoa(t.ConcurrentTrials), "--gpus-per-trial", strconv.Itoa(t.GPUsPerTrial),
		"--startup-timeout", t.StartupTimeout.String()})
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: t.meta("-workers", "tune-worker"),
		Spec: batchv1.JobSpec{
			// No completions: a work-queue Job; it succeeds once a worker
			// exits 0 (the study's budget is used) and all have stopped.
			Parallelism:  &m,
			BackoffLimit: ptr(int32(t.Workers * 2)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: t.meta("", "tune-worker").Labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyOnFailure,
					Volumes: []corev1.Volume{{Name: "flags", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}}},
					Containers: []corev1.Container{{
						Name: "worker", Image: t.Image, Command: []string{"/bin/sh", "-c"},
						Args: []string{fmt.Sprintf(`eval "set -- $(cat %s/%s)" && exec servebench tune %s "$@"`, flagsMount, flagsKey, own)},
						// The device plugin sets NVIDIA_VISIBLE_DEVICES to
						// the pod's GPUs; the worker splits them per trial.
						VolumeMounts: []corev1.VolumeMount{{Name: "flags", MountPath: flagsMount, ReadOnly: true}},
						Env:          creds.env(t.secretName(), t.Secret != ""),
						Resources:    resources,
					}},
				},
			},
		},
	}
	return []runtime.Object{cm, job}, nil
}

func podResources(cpu, memory string) (corev1.ResourceRequirements, error) {
	list := corev1.ResourceList{}
	for _, r := range []struct {
		flag, value string
		name        corev1.ResourceName
	}{{"--cpu", cpu, corev1.ResourceCPU}, {"--memory", memory, corev1.ResourceMemory}} {
		if r.value == "" {
			continue
		}
		q, err := resource.ParseQuantity(r.value)
		if err != nil {
			return corev1.ResourceRequirements{}, fmt.Errorf("%s %q: not a Kubernetes quantity like 2 or 500m or 1Gi", r.flag, r.value)
		}
		list[r.name] = q
	}
	if len(list) == 0 {
		return corev1.ResourceRequirements{}, nil
	}
	// Requests equal to limits: a shard starved of CPU shows up as send
	// lag, not as the server's latency.
	return corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}, nil
}

// YAML renders objects as one multi-document YAML stream.
func YAML(objs []runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	for i, o := range objs {
		data, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("k8s: encoding %T: %w", o, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(data)
	}
	return buf.Bytes(), nil
}

// ShellJoin quotes args for a POSIX shell: each in single quotes unless
// it is made of characters no shell treats specially.
func ShellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+%") == "" {
			quoted[i] = a
			continue
		}
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}

func ptr[T any](v T) *T { return &v }
