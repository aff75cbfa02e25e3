package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/sweep"
	"github.com/servebench/servebench/tune"
)

func init() { extraCommands = append(extraCommands, newTuneCmd) }

// tuneFlags are tune's own flags; the study's fixed engine and workload
// flags come after "--".
type tuneFlags struct {
	study      tune.Study
	sla        string
	reportOnly bool
}

const tuneLong = `Search vLLM's engine flags for the highest throughput (or any result key) under an SLO.
Every sampled point is first checked with the chosen release's rules through the resolver
sim uses (argument choices, scheduler config, parallelism, memory fit, KV capacity); an
invalid point is never run, it is recorded with vLLM's own message and scored 0 so the
sampler learns to avoid it. Valid points run on the target:

  --target sim        (default) the simulator, in-process: seconds per trial
  --target embedded   the built-in emulated vLLM server, restarted per trial, load-tested by bench
  --target URL        bench against a server you run (its flags are not changed per trial)
  --launch TEMPLATE   a real server per trial from a shell template, e.g.
                      'vllm serve {model} --port {port} --load-format dummy {flags}'

Placeholders: {model}, {port}, {host}, {flags} (the point as vllm serve flags) and each
parameter by name ({max_num_seqs}). A launched server is polled on /health until healthy
(--startup-timeout); its log is kept in the trial's directory; vLLM's "# GPU blocks", "GPU
KV cache size" and "Maximum concurrency" lines and nvidia-smi's memory are recorded. A
server that exits at startup, never becomes healthy or dies mid-run fails its trial with the
log tail, and the study goes on.

Engine and workload flags fixed for the whole study go after "--", as for sim and bench:

  servebench tune --trials 40 --sla 'p99_ttft_ms<=2000,p99_tpot_ms<=60' -- \
      --model Qwen2.5-7B-Instruct --gpu L40S --vllm-version 0.6.3 --max-model-len 4096 \
      --num-prompts 300 --random-input-len 1024 --random-output-len 256 --request-rate 8

The search space defaults to the release's knobs around its defaults. Give your own with
--param (repeatable) or --space FILE:

  --param max_num_seqs=int:16:512:log   --param block_size=8,16,32
  --param enable_chunked_prefill=bool   --param max_model_len=4096 (pinned)
  --condition 'enable_chunked_prefill==false => max_num_batched_tokens>=max_model_len'

  # space.yaml
  params:
    max_num_seqs: {type: int, low: 16, high: 512, log: true}
    max_num_batched_tokens: {type: int, low: 512, high: 16384, log: true}
    block_size: [8, 16, 32]
    enable_chunked_prefill: {type: bool}
    scheduler_delay_factor: {type: float, low: 0, high: 0.5}
    max_model_len: 4096            # pinned: passed to every trial
  conditions:
    - if: enable_chunked_prefill == false
      then: max_num_batched_tokens >= max_model_len

A condition "X >= Y" (or <=) that fails moves X to Y when X's range allows it; any other
failing condition rejects the point. Names are vLLM's options in snake_case; a condition may
name max_model_len etc. even when it is not a parameter (the model's resolved value).

Studies persist in --storage (an SQLite file, or postgresql://USER@HOST/DB for workers on
several machines): rerun the same command to resume after Ctrl-C or kill -9, with no trial
lost or run twice; start it again in another terminal to add a worker. A --storage file that
exists but holds no study (zero bytes, another program's database) is refused rather than
silently started over; --new-study starts a study in it. Trials of a dead
worker are given back after --stale-after (at once when it ran on this host). Samplers:
random, tpe (default), cmaes (int/float parameters only).

Real targets can be screened on sim first: --prescreen-sim N lets the sampler try
--prescreen-candidates points on the simulator (same release, model, GPU and flags) and spends
the study's first N trials on sim's N best, best first (DIR/prescreen/ranked.json); the rest of
--trials is sampled as usual. Every sampled parameter must be one servebench models.

Output: a live table of trials (config, objective, SLO pass/fail, predicted or observed KV
and memory, failure reason), then the best config as a vllm serve command, the TTFT vs
objective Pareto front, and trials.json / trials.csv plus each trial's result JSON in --dir.
--html FILE also writes the study as one offline page (objective by trial, Pareto front,
parameter importance, trials); --report-only --html FILE writes it from --storage/--study
without running a trial.`

func newTuneCmd() *cobra.Command {
	f := &tuneFlags{}
	st := &f.study
	cmd := &cobra.Command{
		Use:   "tune [flags] -- ENGINE-AND-WORKLOAD-FLAGS",
		Short: "Search vLLM flags for the best throughput under an SLO (sim, emulated server or a real vLLM)",
		Long:  tuneLong,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash > 0 || dash < 0 && len(args) > 0 {
				return fmt.Errorf("unexpected argument %q: engine and workload flags go after --, e.g. servebench tune -- --model Qwen2.5-7B-Instruct", args[0])
			}
			return runTune(cmd, f, args)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&st.Target, "target", tune.TargetSim, `where trials run: "sim", "embedded" or a server URL`)
	fs.StringVar(&st.Launch.Template, "launch", "", "shell template that starts a real server per trial (see above); overrides --target")
	fs.IntVar(&st.Launch.Port, "launch-port", 0, "port for launched servers (default: a free loopback port per trial)")
	fs.DurationVar(&st.Launch.StartupTimeout, "startup-timeout", 10*time.Minute, "how long a launched server may take to answer /health")
	fs.StringVar(&st.Launch.HealthPath, "health-path", "/health", "readiness path of launched servers")
	fs.IntVar(&st.Trials, "trials", 30, "trials in the study (all workers together), invalid ones included")
	fs.StringVar(&st.Sampler, "sampler", tune.SamplerTPE, "sampler: "+strings.Join(tune.Samplers, ", "))
	fs.Int64Var(&st.Seed, "sampler-seed", 0, "seed of the sampler")
	fs.IntVar(&st.StartupTrials, "startup-trials", 3, "random trials before TPE or CMA-ES start modelling")
	fs.StringVar(&st.SpaceFile, "space", "", "search space YAML file (see above)")
	fs.StringArrayVar(&st.Params, "param", nil, "search space parameter NAME=SPEC (repeatable; see above)")
	fs.StringArrayVar(&st.Conditions, "condition", nil, "condition 'IF => THEN' or 'THEN' between parameters (repeatable)")
	fs.StringVar(&st.Objective, "objective", "request_throughput", "result key to maximise: request_throughput, output_throughput, request_goodput (needs --goodput) or any numeric key")
	fs.StringVar(&f.sla, "sla", "", "SLO every trial must meet, e.g. 'p99_ttft_ms<=500,p99_tpot_ms<=50' (sweep's syntax)")
	fs.BoolVar(&st.SLASearch, "sla-search", false, "per trial, search the highest --request-rate meeting --sla (sweep's search) and score the trial there")
	fs.IntVar(&st.SLAMaxRuns, "sla-max-runs", 8, "most load tests one trial's SLA search may take")
	fs.StringVar(&st.ParetoTTFT, "pareto-ttft", "p99_ttft_ms", "TTFT key of the Pareto front (TTFT vs objective)")
	fs.StringVar(&st.Storage, "storage", "", "study storage: FILE.db, sqlite:///FILE, postgresql://USER@HOST/DB or 'host=HOST dbname=DB user=USER' (default: DIR/study.db)")
	fs.StringVar(&st.Name, "study", "default", "study name inside the storage")
	fs.BoolVar(&st.NewStudy, "new-study", false, "start the study in a --storage that exists but holds no study (e.g. a zero-byte file), which is otherwise an error; refused when the study exists")
	fs.StringVar(&st.Dir, "dir", "", "directory for trial results, server logs, trials.json and trials.csv (default tune-STUDY)")
	fs.DurationVar(&st.StaleAfter, "stale-after", time.Minute, "give back a running trial whose worker has been silent this long")
	fs.BoolVar(&st.Worker, "worker", false, "run as one worker of a shared study (needs --storage): claim, run and store trials until the study's --trials are used")
	fs.IntVar(&st.ConcurrentTrials, "concurrent-trials", 1, "with --worker: trials this worker runs at once, each with its own GPUs")
	fs.IntVar(&st.GPUsPerTrial, "gpus-per-trial", 0, "with --worker: GPUs of $CUDA_VISIBLE_DEVICES (else $NVIDIA_VISIBLE_DEVICES) given to each trial's server through its environment")
	fs.StringVar(&st.HTML, "html", "", "also write the study as one HTML page: objective by trial, Pareto front, parameter importance, all trials")
	fs.BoolVar(&f.reportOnly, "report-only", false, "run no trial: print and write (--html) the stored study's report; needs no engine flags")
	fs.IntVar(&st.PrescreenSim, "prescreen-sim", 0, "real targets: rank candidates on sim first and spend the first N trials on sim's N best (see above)")
	fs.IntVar(&st.PrescreenCandidates, "prescreen-candidates", 0, "points the sampler screens on sim for --prescreen-sim (default max(50, 4×N))")
	fs.IntVar(&st.Confirm, "confirm", 0, "re-run the best N configs 3 times each with other workload seeds and report the spread")
	return cmd
}

// runTune completes the study from the command line and runs it.
func runTune(cmd *cobra.Command, f *tuneFlags, args []string) error {
	st := &f.study
	if f.reportOnly {
		return tune.ReportStored(cmd.Context(), cmd.OutOrStdout(), st.Name, st.Dir, st.Storage, st.HTML, st.Objective, st.ParetoTTFT)
	}
	if st.Dir == "" {
		st.Dir = "tune-" + st.Name
	}
	if f.sla != "" {
		sla, err := sweep.ParseSLA(f.sla)
		if err != nil {
			return err
		}
		st.SLA = sla
	}
	target := st.Target
	if st.Launch.Template != "" {
		target = "launch"
	}
	fixed, load, err := tune.ParseFixed(args, target)
	if err != nil {
		return err
	}
	st.Fixed, st.Load = fixed, load
	env := readEnv()
	st.Fixed.Env = env
	if st.Load != nil {
		st.Load.Env = env
		// Headers masked in a worker pod's flags come from its Secret.
		st.Load.FillSecrets(os.LookupEnv)
	}
	return st.Run(cmd.Context(), runIO(cmd))
}
