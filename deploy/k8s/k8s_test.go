package k8s

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"

	"github.com/servebench/servebench/runspec"
)

// decodeStrict decodes a multi-document stream with the API machinery in
// strict mode: an unknown or duplicated field is an error.
func decodeStrict(t *testing.T, data []byte) []runtime.Object {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := batchv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	var objs []runtime.Object
	for i, doc := range bytes.Split(data, []byte("\n---\n")) {
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("document %d: %v\n%s", i, err, doc)
		}
		// The typed strict decoder of sigs.k8s.io/yaml must agree.
		var probe map[string]any
		if err := yaml.UnmarshalStrict(doc, &probe); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		objs = append(objs, obj)
	}
	return objs
}

// kubectlDryRun runs kubectl apply --dry-run=client on data when kubectl
// is installed, against an httptest API server that only answers
// discovery (kubectl maps kinds to resources through it) and 404 for
// every object, so apply reports each as created.
func kubectlDryRun(t *testing.T, data []byte) {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Log("kubectl not found: skipping kubectl apply --dry-run=client")
		return
	}
	discovery := map[string]any{
		"/api": metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}},
		"/apis": metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{{Name: "batch",
			Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "batch/v1", Version: "v1"}}, PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "batch/v1", Version: "v1"}}}},
		"/api/v1": metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"get", "create", "patch"}},
			{Name: "persistentvolumeclaims", Namespaced: true, Kind: "PersistentVolumeClaim", Verbs: []string{"get", "create", "patch"}}}},
		"/apis/batch/v1": metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "batch/v1", APIResources: []metav1.APIResource{
			{Name: "jobs", Namespaced: true, Kind: "Job", Verbs: []string{"get", "create", "patch"}}}},
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if body, ok := discovery[r.URL.Path]; ok {
			_ = json.NewEncoder(w).Encode(body)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound})
	}))
	defer api.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "manifests.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(kubectl, "apply", "--dry-run=client", "--validate=false", "--server", api.URL, "--cache-dir", filepath.Join(dir, "cache"), "-f", path)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "none"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=client: %v\n%s", err, out)
	}
	if got := strings.Count(string(out), "(dry run)"); got != len(bytes.Split(data, []byte("\n---\n"))) {
		t.Errorf("kubectl accepted %d objects:\n%s", got, out)
	}
}

func TestBenchManifests(t *testing.T) {
	start := time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		shards    int
		claim     string
		wantPVC   bool
		wantClaim string
	}{
		{name: "16 shards on a new claim", shards: 16, wantPVC: true, wantClaim: "run1-records"},
		{name: "existing claim", shards: 3, claim: "shared-rwx", wantClaim: "shared-rwx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Bench{Common: Common{Name: "run1", Namespace: "perf", Image: "example/servebench:1"}, Shards: tt.shards,
				Spec: benchSpec(t, "--base-url", "http://vllm:8000", "--request-rate", "2000", "--header", "X-Run: it's 1"), StartAt: start,
				Claim: tt.claim, StorageSize: "2Gi", MergeDeadline: time.Hour, CPU: "2", Memory: "1Gi"}
			objs, err := b.Objects()
			if err != nil {
				t.Fatal(err)
			}
			data, err := YAML(objs)
			if err != nil {
				t.Fatal(err)
			}
			decoded := decodeStrict(t, data)
			var pvc *corev1.PersistentVolumeClaim
			var cm *corev1.ConfigMap
			jobs := map[string]*batchv1.Job{}
			for _, o := range decoded {
				switch o := o.(type) {
				case *corev1.PersistentVolumeClaim:
					pvc = o
				case *corev1.ConfigMap:
					cm = o
				case *batchv1.Job:
					jobs[o.Name] = o
				default:
					t.Fatalf("unexpected object %T", o)
				}
			}
			if (pvc != nil) != tt.wantPVC {
				t.Fatalf("PVC present %v, want %v", pvc != nil, tt.wantPVC)
			}
			if pvc != nil && (len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != corev1.ReadWriteMany || pvc.Spec.Resources.Requests.Storage().String() != "2Gi") {
				t.Errorf("PVC spec %+v: want one ReadWriteMany 2Gi", pvc.Spec)
			}
			if cm == nil || cm.Data["start-at"] != "2026-11-23T14:00:00Z" || cm.Data["shards"] != itoa(tt.shards) {
				t.Fatalf("ConfigMap %+v", cm)
			}
			// The pods read back the very spec, quote and all.
			back, err := runspec.ParseYAML([]byte(cm.Data["spec.yaml"]))
			if err != nil || !slices.Equal(back.Args(), b.Spec.Args()) {
				t.Errorf("spec.yaml reads back as %q (%v), want %q:\n%s", back.Args(), err, b.Spec.Args(), cm.Data["spec.yaml"])
			}

			shards := jobs["run1-shards"]
			if shards == nil {
				t.Fatalf("no shard Job among %v", jobs)
			}
			s := shards.Spec
			if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || *s.Parallelism != int32(tt.shards) || *s.Completions != int32(tt.shards) {
				t.Errorf("shard Job: mode %v parallelism %d completions %d", s.CompletionMode, *s.Parallelism, *s.Completions)
			}
			if shards.Namespace != "perf" {
				t.Errorf("namespace %q", shards.Namespace)
			}
			c := s.Template.Spec.Containers[0]
			if len(c.Env) != 1 || c.Env[0].Name != EnvShardCount || c.Env[0].Value != itoa(tt.shards) {
				t.Errorf("shard env %+v: want %s=%d", c.Env, EnvShardCount, tt.shards)
			}
			script := strings.Join(c.Args, " ")
			for _, want := range []string{"servebench bench --spec /etc/servebench/spec.yaml", "--start-at", "--result-dir /records/run1"} {
				if !strings.Contains(script, want) {
					t.Errorf("shard command %q lacks %q", script, want)
				}
			}
			if c.Resources.Limits.Cpu().String() != "2" || c.Resources.Requests.Memory().String() != "1Gi" {
				t.Errorf("shard resources %+v", c.Resources)
			}
			if claim := s.Template.Spec.Volumes[1].PersistentVolumeClaim; claim == nil || claim.ClaimName != tt.wantClaim {
				t.Errorf("records volume %+v, want claim %s", s.Template.Spec.Volumes[1], tt.wantClaim)
			}

			merge := jobs["run1-merge"]
			if merge == nil {
				t.Fatal("no merge Job")
			}
			wait := strings.Join(merge.Spec.Template.Spec.InitContainers[0].Args, " ")
			if !strings.Contains(wait, "/records/run1/*.shard.json") || !strings.Contains(wait, "-ge "+itoa(tt.shards)) {
				t.Errorf("merge waits with %q", wait)
			}
			if got := strings.Join(merge.Spec.Template.Spec.Containers[0].Command, " "); got != "servebench merge --save-result --result-dir /records/run1/merged /records/run1" {
				t.Errorf("merge command %q", got)
			}
			if *merge.Spec.ActiveDeadlineSeconds != 3600 {
				t.Errorf("merge deadline %d", *merge.Spec.ActiveDeadlineSeconds)
			}
			kubectlDryRun(t, data)
		})
	}
}

func TestTuneManifests(t *testing.T) {
	tests := []struct {
		name             string
		concurrent, gpus int
		wantGPU          string
	}{
		{name: "one trial of 1 GPU", concurrent: 1, gpus: 1, wantGPU: "1"},
		{name: "2 trials of 2 GPUs", concurrent: 2, gpus: 2, wantGPU: "4"},
		{name: "CPU only", concurrent: 3, gpus: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tu := Tune{Common: Common{Name: "study", Image: "example/servebench:1"}, Workers: 8, ConcurrentTrials: tt.concurrent, GPUsPerTrial: tt.gpus,
				Storage: "postgresql://tune@pg:5432/tune", Study: "s1", StartupTimeout: 15 * time.Minute,
				Flags: []string{"--trials", "64", "--launch", "vllm serve {model} --port {port} {flags}", "--", "--model", "m"}}
			objs, err := tu.Objects()
			if err != nil {
				t.Fatal(err)
			}
			data, err := YAML(objs)
			if err != nil {
				t.Fatal(err)
			}
			decoded := decodeStrict(t, data)
			if len(decoded) != 2 {
				t.Fatalf("%d objects, want ConfigMap and Job", len(decoded))
			}
			job, ok := decoded[1].(*batchv1.Job)
			if !ok {
				t.Fatalf("second object %T", decoded[1])
			}
			if *job.Spec.Parallelism != 8 || job.Spec.Completions != nil || job.Spec.CompletionMode != nil {
				t.Errorf("worker Job: parallelism %d completions %v mode %v; want a work-queue Job of 8", *job.Spec.Parallelism, job.Spec.Completions, job.Spec.CompletionMode)
			}
			c := job.Spec.Template.Spec.Containers[0]
			gpu, has := c.Resources.Limits[GPUResource]
			if tt.wantGPU == "" && has || tt.wantGPU != "" && gpu.String() != tt.wantGPU {
				t.Errorf("nvidia.com/gpu limit %v (present %v), want %q", gpu.String(), has, tt.wantGPU)
			}
			script := strings.Join(c.Args, " ")
			for _, want := range []string{"servebench tune", "--storage postgresql://tune@pg:5432/tune", "--study s1", "--worker",
				"--concurrent-trials " + itoa(tt.concurrent), "--gpus-per-trial " + itoa(tt.gpus), "--startup-timeout 15m0s"} {
				if !strings.Contains(script, want) {
					t.Errorf("worker command %q lacks %q", script, want)
				}
			}
			kubectlDryRun(t, data)
		})
	}
}

func TestManifestErrors(t *testing.T) {
	common := Common{Name: "ok", Image: "img"}
	start := time.Unix(0, 0)
	target := benchSpec(t, "--base-url", "http://vllm:8000")
	tests := []struct {
		name string
		objs func() ([]runtime.Object, error)
		want string
	}{
		{"bad name", func() ([]runtime.Object, error) {
			return Bench{Common: Common{Name: "Bad_Name", Image: "img"}, Shards: 2, StartAt: start, StorageSize: "1Gi", MergeDeadline: time.Hour, Spec: target}.Objects()
		}, "--name"},
		{"zero shards", func() ([]runtime.Object, error) {
			return Bench{Common: common, StartAt: start, StorageSize: "1Gi", MergeDeadline: time.Hour, Spec: target}.Objects()
		}, "--shards 0"},
		{"shard flag given", func() ([]runtime.Object, error) {
			return Bench{Common: common, Shards: 2, StartAt: start, StorageSize: "1Gi", MergeDeadline: time.Hour, Spec: benchSpec(t, "--base-url", "http://h:1", "--shard=1/2")}.Objects()
		}, "--shard"},
		{"no target", func() ([]runtime.Object, error) {
			return Bench{Common: common, Shards: 2, StartAt: start, StorageSize: "1Gi", MergeDeadline: time.Hour, Spec: benchSpec(t, "--num-prompts", "10")}.Objects()
		}, "give the server with --base-url"},
		{"bad bench value", func() ([]runtime.Object, error) {
			return Bench{Common: common, Shards: 2, StartAt: start, StorageSize: "1Gi", MergeDeadline: time.Hour, Spec: benchSpec(t, "--base-url", "http://h:1", "--random-range-ratio", "2")}.Objects()
		}, "range_ratio"},
		{"bad size", func() ([]runtime.Object, error) {
			return Bench{Common: common, Shards: 2, StartAt: start, StorageSize: "lots", MergeDeadline: time.Hour, Spec: target}.Objects()
		}, "--storage-size"},
		{"sqlite storage", func() ([]runtime.Object, error) {
			return Tune{Common: common, Workers: 2, ConcurrentTrials: 1, Storage: "study.db", StartupTimeout: time.Minute}.Objects()
		}, "PostgreSQL"},
		{"worker flag given", func() ([]runtime.Object, error) {
			return Tune{Common: common, Workers: 2, ConcurrentTrials: 1, Storage: "postgresql://x@y/z", StartupTimeout: time.Minute, Flags: []string{"--worker"}}.Objects()
		}, "--worker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.objs()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one naming %q", err, tt.want)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// benchSpec is a bench run spec of args.
func benchSpec(t *testing.T, args ...string) *runspec.Spec {
	t.Helper()
	s, err := runspec.Parse(runspec.Bench, args)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
