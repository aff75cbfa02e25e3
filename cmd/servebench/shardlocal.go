package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/servebench/servebench/report"
)

// maxLocalShards bounds --shards with --local: every shard is a process
// with its own HTTP client pool on this machine.
const maxLocalShards = 64

// localStartDelay is how far after the last shard is ready the shared
// start instant is set: enough for every process to read it and arm its
// timer.
const localStartDelay = time.Second

// localShardOwnFlags are the flags the parent sets itself for each shard
// process (or that only make sense for the merged result), never copied.
var localShardOwnFlags = map[string]bool{
	"shards": true, "local": true, "shard": true, "start-at": true,
	"result-dir": true, "result-filename": true, "save-result": true, "save-detailed": true,
	"append-result": true, "records": true, "summary-json": true, "label": true, "metadata": true,
	"disable-tqdm": true, "base-url": true, "host": true, "port": true,
}

// runLocalShards runs `bench --shards N --local`: N copies of this binary,
// each benchmarking shard I/N of the schedule against one target, started
// together through a stdin barrier, then merged.
func runLocalShards(ctx context.Context, cmd *cobra.Command, f *benchFlags) error {
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	changed := cmd.Flags().Changed
	n := f.shard.shards
	switch {
	case !f.shard.local:
		return fmt.Errorf("--shards %d: add --local to run the shards on this machine (elsewhere run each with --shard I/%d)", n, n)
	case n < 1 || n > maxLocalShards:
		return fmt.Errorf("--shards %d: give 1 to %d local shard processes", n, maxLocalShards)
	case changed("shard") || changed("start-at"):
		return errors.New("--local runs every shard itself: drop --shard and --start-at")
	}
	metadata, err := f.output.validate()
	if err != nil {
		return err
	}
	if err := f.output.checkDirs(); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--local: cannot find this program to start the shards: %w", err)
	}

	// One target for every shard: an embedded emulator must run here, not
	// once per shard.
	baseURL := strings.TrimRight(f.baseURL, "/")
	if baseURL == "" && !changed("host") && !changed("port") {
		if serverAnswers(ctx, f.defaultTarget) {
			baseURL = "http://" + f.defaultTarget
		} else {
			emulate := f.emulatedModel
			if f.model != "" && !changed("emulated-model") {
				emulate = f.model
			}
			target, err := startEmbeddedTarget(ctx, errw, emulate, f.emulatedGPU)
			if err != nil {
				return fmt.Errorf("--local: the built-in emulated server cannot start: %w (pass --base-url)", err)
			}
			defer target.stop()
			baseURL = target.url
			if f.model == "" {
				f.model = target.model
			}
		}
	} else if baseURL == "" {
		baseURL = "http://" + f.host + ":" + strconv.Itoa(f.port)
	}

	dir, keep, err := localShardDir(f.output.resultDir)
	if err != nil {
		return err
	}
	common := childArgs(cmd.Flags())
	common = append(common, "--base-url="+baseURL, "--disable-tqdm", "--start-at="+startAtFromStdin, "--result-dir="+dir)
	if f.model != "" && !changed("model") {
		common = append(common, "--model="+f.model)
	}
	if !changed("server-metrics-interval") {
		// One scraper per shard would multiply the load on /metrics.
		common = append(common, "--server-metrics-interval=0")
	}
	fmt.Fprintf(errw, "Running %d shard processes against %s; shard records and logs in %s\n", n, baseURL, dir)
	if err := runShardProcesses(ctx, exe, common, n, dir); err != nil {
		return fmt.Errorf("%w (shard logs in %s)", err, dir)
	}
	shards, err := report.LoadShards(dir)
	if err != nil {
		return err
	}
	merged, err := report.MergeShards(shards)
	if err != nil {
		err = fmt.Errorf("%w (shard files in %s)", err, dir)
		if ctx.Err() != nil {
			return exitCodeError{code: 130, err: err}
		}
		return err
	}
	if err := writeMerged(out, errw, &f.output, metadata, merged); err != nil {
		return err
	}
	if !keep {
		_ = os.RemoveAll(dir)
	}
	return nil
}

// localShardDir is where the shards write: a new directory under
// --result-dir, kept; else a temporary one, removed after the merge.
func localShardDir(resultDir string) (string, bool, error) {
	if resultDir == "" {
		dir, err := os.MkdirTemp("", "servebench-shards-")
		return dir, false, err
	}
	base := filepath.Join(resultDir, "shards-"+time.Now().Format("20060102-150405"))
	for attempt := 1; attempt <= maxNameAttempts; attempt++ {
		dir := base
		if attempt > 1 {
			dir += "-" + strconv.Itoa(attempt)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, true, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", false, fmt.Errorf("--result-dir: %w", err)
		}
	}
	return "", false, fmt.Errorf("--result-dir %q: no free shards directory name", resultDir)
}

// childArgs repeats every flag the user set, except those the parent sets
// per shard, in --name=value form (repeated for list flags).
func childArgs(fs *pflag.FlagSet) []string {
	var args []string
	fs.Visit(func(fl *pflag.Flag) {
		if localShardOwnFlags[fl.Name] {
			return
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+fl.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+fl.Name+"="+fl.Value.String())
	})
	return args
}

// shardProcess is one running shard.
type shardProcess struct {
	index int
	cmd   *exec.Cmd
	stdin io.WriteCloser
	log   *os.File
	ready chan struct{}
	// scanned is closed when stderr is read to its end; only then may
	// the process be waited for (exec.Cmd.StderrPipe's rule).
	scanned chan struct{}
	// lastLine is the last stderr line, for the error when it fails.
	mu       sync.Mutex
	lastLine string
}

// runShardProcesses starts n shards, waits until every one is ready to
// send, hands them one start instant a second ahead, and waits for all.
func runShardProcesses(ctx context.Context, exe string, common []string, n int, dir string) error {
	procs := make([]*shardProcess, n)
	allExited := make(chan struct{})
	exited := make(chan int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	defer wg.Wait()
	stopAll := func() {
		for _, p := range procs {
			if p != nil && p.cmd.Process != nil {
				_ = p.cmd.Process.Signal(os.Interrupt)
			}
		}
	}
	for i := range n {
		p, err := startShardProcess(exe, common, i, n, dir)
		if err != nil {
			stopAll()
			return err
		}
		procs[i] = p
		wg.Go(func() {
			<-p.scanned
			errs[i] = p.cmd.Wait()
			p.log.Close()
			exited <- i
		})
	}
	// Barrier: every shard has built its workload and sent its initial
	// test request before any starts measuring.
	for _, p := range procs {
		select {
		case <-p.ready:
		case i := <-exited:
			stopAll()
			return fmt.Errorf("shard %d/%d exited before it was ready: %s", i, n, procs[i].last())
		case <-ctx.Done():
			stopAll()
			return fmt.Errorf("interrupted before the shards started: %w", ctx.Err())
		}
	}
	startAt := time.Now().Add(localStartDelay).UTC().Format(time.RFC3339Nano) + "\n"
	for _, p := range procs {
		_, _ = io.WriteString(p.stdin, startAt)
		p.stdin.Close()
	}
	// The first interrupt lets the shards' requests in flight finish, the
	// second cuts them off: forward each, as the shards do not share the
	// terminal's process group.
	stop := context.AfterFunc(ctx, func() {
		stopAll()
		if abort := abortChannel(ctx); abort != nil {
			select {
			case <-abort:
				stopAll()
			case <-allExited:
			}
		}
	})
	defer stop()
	wg.Wait()
	close(allExited)
	var failed []string
	for i, err := range errs {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 130 {
			continue // interrupted: its manifest says so and merge reports what is missing
		}
		if err != nil {
			failed = append(failed, fmt.Sprintf("shard %d/%d: %v: %s", i, n, err, procs[i].last()))
		}
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

func startShardProcess(exe string, common []string, i, n int, dir string) (*shardProcess, error) {
	args := append([]string{"bench", "--shard=" + strconv.Itoa(i) + "/" + strconv.Itoa(n)}, common...)
	c := exec.Command(exe, args...)
	// The shard must not take its index from a Job's environment.
	c.Env = withoutEnv(os.Environ(), envShardCount, envCompletionIndex)
	ownProcessGroup(c)
	logPath := filepath.Join(dir, fmt.Sprintf("shard-%d-of-%d.log", i, n))
	log, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("shard log: %w", err)
	}
	c.Stdout = log
	stdin, err := c.StdinPipe()
	if err != nil {
		log.Close()
		return nil, err
	}
	stderr, err := c.StderrPipe()
	if err != nil {
		log.Close()
		return nil, err
	}
	p := &shardProcess{index: i, cmd: c, stdin: stdin, log: log, ready: make(chan struct{}), scanned: make(chan struct{})}
	if err := c.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start shard %d/%d: %w", i, n, err)
	}
	go func() {
		defer close(p.scanned)
		p.scanStderr(stderr)
	}()
	return p, nil
}

// scanStderr copies the shard's stderr to its log and closes ready at the
// shard's ready line.
func (p *shardProcess) scanStderr(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	readied := false
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(p.log, line)
		if strings.TrimSpace(line) != "" {
			p.mu.Lock()
			p.lastLine = line
			p.mu.Unlock()
		}
		if !readied && strings.HasPrefix(line, shardReadyMarker) {
			readied = true
			close(p.ready)
		}
	}
	// A line too long to scan: keep the rest in the log so the shard never
	// blocks on a full pipe.
	_, _ = io.Copy(p.log, r)
}

func (p *shardProcess) last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lastLine == "" {
		return "no output (see its log)"
	}
	return p.lastLine
}

func withoutEnv(env []string, names ...string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			drop = drop || name == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}
