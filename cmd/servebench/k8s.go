package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/servebench/servebench/deploy/k8s"
	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/tune"
)

func init() { extraCommands = append(extraCommands, newK8sCmd) }

func newK8sCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Print Kubernetes manifests for a sharded bench or distributed tune workers",
		Long: `Print Kubernetes manifests (kubectl apply -f -) built from the official API types.

  servebench k8s bench --shards 16 --image IMAGE -- BENCH-FLAGS
      a ReadWriteMany PVC (or --claim), a ConfigMap of the bench flags, an Indexed Job of
      16 shards that start together at --start-at, and a merge Job that runs
      "servebench merge" on the shared volume once every shard wrote its manifest.
  servebench k8s tune --workers 8 --storage postgresql://... --image IMAGE -- TUNE-FLAGS [-- ENGINE-FLAGS]
      a ConfigMap of the tune flags and a Job of 8 tune workers on one PostgreSQL study,
      each requesting nvidia.com/gpu for its concurrent trials.

Credentials never appear in the printed manifests, their ConfigMaps or the pods' command
lines: credential --header values (Authorization, X-Api-Key, Cookie, ...), a --base-url
password and the --storage password go into a Secret that the pods read as environment
variables (secretKeyRef). --secret-file FILE writes that Secret to FILE (mode 0600) for
kubectl apply -f FILE; --secret NAME uses a Secret you made, with these keys:
  header-<name>    each credential header's value, name in lower case (header-authorization);
                   give the header after -- with an empty value: --header 'Authorization:'
  base-url         the --base-url, when it carries a password or key
  pgpassword       tune: the PostgreSQL password, read as PGPASSWORD (optional)
  openai-api-key   bench: OPENAI_API_KEY (optional)`,
	}
	cmd.AddCommand(newK8sBenchCmd(), newK8sTuneCmd())
	return cmd
}

func k8sCommonFlags(fs *pflag.FlagSet, c *k8s.Common) {
	fs.StringVar(&c.Name, "name", "servebench", "name prefix of every object (a DNS label)")
	fs.StringVar(&c.Namespace, "namespace", "", "namespace of every object (default: kubectl's)")
	fs.StringVar(&c.Image, "image", "ghcr.io/servebench/servebench:latest", "container image with servebench on PATH and /bin/sh")
}

// k8sPassThrough returns the flags after the first "--".
func k8sPassThrough(cmd *cobra.Command, args []string) ([]string, error) {
	dash := cmd.ArgsLenAtDash()
	if dash != 0 && len(args) > 0 {
		return nil, fmt.Errorf("unexpected argument %q: the flags of the pods go after --", args[0])
	}
	return args, nil
}

// secretFlags say where a run's credentials live: a Secret the user
// has (its name goes to the flag's setName), or one servebench writes to
// a file only its owner reads.
type secretFlags struct{ file string }

func (f *secretFlags) register(fs *pflag.FlagSet, setName *string) {
	fs.StringVar(setName, "secret", "", "existing Secret holding the credentials under the keys listed above (header-<name>, base-url, pgpassword, openai-api-key); nothing secret is then printed or written")
	fs.StringVar(&f.file, "secret-file", "", "write the Secret holding the credentials given after -- to this `FILE` (mode 0600) for kubectl apply -f FILE; the printed manifests reference it")
}

// manifests is what a k8s command prints, and the Secret it writes apart.
type manifests struct {
	build       func() ([]runtime.Object, error)
	credentials func() (*corev1.Secret, error)
	names       func() []string
}

// printManifests writes the objects as one YAML stream, and the
// credentials' Secret, if the run has credentials, to --secret-file:
// never to the stream, which ends up in terminals, logs and repositories.
func printManifests(cmd *cobra.Command, m manifests, f *secretFlags) error {
	objs, err := m.build()
	if err != nil {
		return err
	}
	secret, err := m.credentials()
	if err != nil {
		return err
	}
	if secret != nil && f.file == "" {
		return fmt.Errorf("%s: credentials go into a Kubernetes Secret, never into printed manifests; pass --secret-file FILE (servebench writes the Secret there) or --secret NAME (a Secret you made with those keys)",
			strings.Join(m.names(), ", "))
	}
	data, err := k8s.YAML(objs)
	if err != nil {
		return err
	}
	if secret != nil {
		sdata, err := k8s.YAML([]runtime.Object{secret})
		if err != nil {
			return err
		}
		if err := writePrivate(f.file, sdata); err != nil {
			return fmt.Errorf("--secret-file: %w", err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "Secret %s written to %s: kubectl apply -f %s before the manifests\n", secret.Name, f.file, f.file)
	} else if f.file != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "No credentials given: --secret-file not written")
	}
	_, err = cmd.OutOrStdout().Write(data)
	return err
}

// writePrivate writes data to path readable by its owner alone, replacing
// what was there.
func writePrivate(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func newK8sBenchCmd() *cobra.Command {
	b := k8s.Bench{}
	var sf secretFlags
	var startAt string
	var startIn time.Duration
	cmd := &cobra.Command{
		Use:   "bench [flags] -- BENCH-FLAGS",
		Short: "Manifests for a sharded benchmark: Indexed Job, ConfigMap, shared volume, merge Job",
		RunE: func(cmd *cobra.Command, args []string) error {
			flags, err := k8sPassThrough(cmd, args)
			if err != nil {
				return err
			}
			// The pods would fail on a flag they cannot parse: check here.
			if b.Spec, err = runspec.Parse(runspec.Bench, flags); err != nil {
				return fmt.Errorf("bench flags after --: %w", err)
			}
			if startAt != "" {
				// The pods need time to start: an instant already past
				// would make every shard late.
				if b.StartAt, err = runspec.ParseStartAt(startAt, time.Now(), 0); err != nil {
					return err
				}
			} else {
				b.StartAt = time.Now().Add(startIn).Truncate(time.Second)
			}
			return printManifests(cmd, manifests{b.Objects, b.Credentials, b.CredentialNames}, &sf)
		},
	}
	fs := cmd.Flags()
	k8sCommonFlags(fs, &b.Common)
	fs.IntVar(&b.Shards, "shards", 4, "shard pods (parallelism and completions of the Indexed Job)")
	fs.StringVar(&startAt, "start-at", "", "RFC3339 instant every shard starts its schedule at (default: now + --start-in)")
	fs.DurationVar(&startIn, "start-in", 3*time.Minute, "without --start-at: start this long after the manifests are printed (time to schedule pods and pull the image)")
	fs.StringVar(&b.Claim, "claim", "", "existing ReadWriteMany PersistentVolumeClaim for the records (default: create NAME-records)")
	fs.StringVar(&b.StorageClass, "storage-class", "", "storage class of the created claim (must support ReadWriteMany)")
	fs.StringVar(&b.StorageSize, "storage-size", "1Gi", "size of the created claim")
	fs.DurationVar(&b.MergeDeadline, "merge-deadline", 2*time.Hour, "how long the merge Job waits for every shard")
	fs.StringVar(&b.CPU, "cpu", "1", "CPU of each shard pod (request = limit)")
	fs.StringVar(&b.Memory, "memory", "1Gi", "memory of each shard pod (request = limit)")
	sf.register(fs, &b.Secret)
	return cmd
}

func newK8sTuneCmd() *cobra.Command {
	t := k8s.Tune{}
	var sf secretFlags
	cmd := &cobra.Command{
		Use:   "tune [flags] -- TUNE-FLAGS [-- ENGINE-AND-WORKLOAD-FLAGS]",
		Short: "Manifests for distributed tune workers on one PostgreSQL study",
		RunE: func(cmd *cobra.Command, args []string) error {
			flags, err := k8sPassThrough(cmd, args)
			if err != nil {
				return err
			}
			if t.Flags, err = checkTuneFlags(flags); err != nil {
				return err
			}
			return printManifests(cmd, manifests{t.Objects, t.Credentials, t.CredentialNames}, &sf)
		},
	}
	fs := cmd.Flags()
	k8sCommonFlags(fs, &t.Common)
	fs.IntVar(&t.Workers, "workers", 2, "worker pods (the Job's parallelism)")
	fs.IntVar(&t.ConcurrentTrials, "concurrent-trials", 1, "trials each worker runs at once")
	fs.IntVar(&t.GPUsPerTrial, "gpus-per-trial", 1, "nvidia.com/gpu per trial (0: CPU-only targets such as sim)")
	fs.StringVar(&t.Storage, "storage", "", "shared study storage: postgresql://USER@HOST/DB or 'host=HOST dbname=DB user=USER'; a password in it goes into the Secret as PGPASSWORD")
	fs.StringVar(&t.Study, "study", "default", "study name")
	fs.DurationVar(&t.StartupTimeout, "startup-timeout", 20*time.Minute, "how long a trial's server may take to become ready on its health path")
	sf.register(fs, &t.Secret)
	return cmd
}

// checkTuneFlags parses a worker's command line (tune flags, then after
// "--" the fixed engine and workload flags) as the pods will, so a flag
// they would refuse fails here, and returns it for the ConfigMap.
func checkTuneFlags(args []string) ([]string, error) {
	own, fixed := args, []string(nil)
	if i := slices.Index(args, "--"); i >= 0 {
		own, fixed = args[:i], args[i+1:]
	}
	tc := newTuneCmd()
	if err := tc.ParseFlags(own); err != nil {
		return nil, fmt.Errorf("tune flags after --: %w", runspec.ParseError("tune", tc.Flags(), err))
	}
	if rest := tc.Flags().Args(); len(rest) > 0 {
		return nil, fmt.Errorf("tune flags after --: unexpected argument %q; the engine and workload flags go after a second --", rest[0])
	}
	target, _ := tc.Flags().GetString("target")
	if launch, _ := tc.Flags().GetString("launch"); launch != "" {
		target = "launch"
	}
	if _, _, err := tune.ParseFixed(fixed, target); err != nil {
		return nil, err
	}
	if len(fixed) == 0 {
		return own, nil
	}
	return append(append(slices.Clone(own), "--"), fixed...), nil
}
