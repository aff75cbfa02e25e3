package bench

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

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
)

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

// RunLocalShards runs a spec's --shards N --local: N copies of this
// program (os.Executable, which must be servebench), each benchmarking
// shard I/N of the schedule against one target, started together through
// a stdin barrier, then merged and printed as one run.
func RunLocalShards(ctx context.Context, s *runspec.Spec, rio runspec.IO) error {
	out, errw, _ := rio.Streams()
	if err := s.Validate(); err != nil {
		return err
	}
	metadata, err := s.Output.MetadataPairs()
	if err != nil {
		return err
	}
	if err := report.CheckOutputDirs(s.Output.Files()); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--local: cannot find this program to start the shards: %w", err)
	}
	// One target for every shard: an embedded emulator must run here, not
	// once per shard.
	baseURL, em, err := findTarget(ctx, s, errw)
	if err != nil {
		return fmt.Errorf("--local: %w", err)
	}
	model := s.Target.Model
	if em != nil {
		defer em.Close()
		if model == "" {
			model = em.Model
		}
	}
	dir, keep, err := localShardDir(s.Output.ResultDir)
	if err != nil {
		return err
	}
	common := childArgs(s)
	common = append(common, "--base-url="+baseURL, "--disable-tqdm", "--start-at="+runspec.StartAtFromStdin, "--result-dir="+dir)
	if model != "" && !s.Changed("model") {
		common = append(common, "--model="+model)
	}
	if !s.Changed("server-metrics-interval") {
		// One scraper per shard would multiply the load on /metrics.
		common = append(common, "--server-metrics-interval=0")
	}
	n := s.Shard.Shards
	fmt.Fprintf(errw, "Running %d shard processes against %s; shard records and logs in %s\n", n, baseURL, dir)
	if err := runShardProcesses(ctx, exe, common, n, dir, rio.Abort); err != nil {
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
			return report.Interrupted(err)
		}
		return err
	}
	if err := report.WriteMerged(out, errw, s.Output.Files(), s.Output.Label, metadata, merged); err != nil {
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
	for attempt := 1; attempt <= report.MaxNameAttempts; attempt++ {
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

// childArgs repeats the spec's flags, except those the parent sets per
// shard, in --name=value form (repeated for list flags).
func childArgs(s *runspec.Spec) []string {
	var args []string
	for _, a := range s.Args() {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !localShardOwnFlags[name] {
			args = append(args, a)
		}
	}
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
func runShardProcesses(ctx context.Context, exe string, common []string, n int, dir string, abort <-chan struct{}) error {
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
		if abort != nil {
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
	c.Env = withoutEnv(os.Environ(), runspec.EnvShardCount, runspec.EnvCompletionIndex)
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
		if !readied && strings.HasPrefix(line, ShardReadyMarker) {
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
