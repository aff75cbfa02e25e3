package e2ebench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// floorEnv makes the test binary one side of BenchmarkLoopbackFloor:
// "writer:<streams>:<steps>:<step>" or "reader:<addr>:<streams>".
const floorEnv = "SERVEBENCH_E2E_FLOOR"

// floorChunk is one token chunk as serve puts it on the wire for the
// emulator load: an HTTP/1.1 chunk around a vLLM completion event.
var floorChunk = func() []byte {
	event := `data: {"id":"cmpl-6a1f0c2b9e8d7f3a5c4b1e0d9f8a7b6c","object":"text_completion","created":1763900000,"model":"m","choices":[{"index":0,"text":" token","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}` + "\n\n"
	return fmt.Appendf(nil, "%x\r\n%s\r\n", len(event), event)
}()

// runFloorSide runs the side of the floor load that spec names.
func runFloorSide(spec string) error {
	f := strings.Split(spec, ":")
	switch {
	case len(f) == 4 && f[0] == "writer":
		streams, err1 := strconv.Atoi(f[1])
		steps, err2 := strconv.Atoi(f[2])
		step, err3 := time.ParseDuration(f[3])
		if err := errors.Join(err1, err2, err3); err != nil {
			return fmt.Errorf("floor writer %q: %w", spec, err)
		}
		return runFloorWriter(streams, steps, step)
	case len(f) == 4 && f[0] == "reader":
		streams, err := strconv.Atoi(f[3])
		if err != nil {
			return fmt.Errorf("floor reader %q: %w", spec, err)
		}
		return runFloorReader(f[1]+":"+f[2], streams)
	}
	return fmt.Errorf("%s=%q: want writer:<streams>:<steps>:<step> or reader:<host>:<port>:<streams>", floorEnv, spec)
}

// runFloorWriter accepts streams connections, then every step writes one
// chunk to each from a single goroutine (no per-stream wake-ups, no HTTP
// layer: one write system call per chunk and nothing else), and closes
// them after steps steps.
func runFloorWriter(streams, steps int, step time.Duration) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	fmt.Println(ln.Addr().String())
	conns := make([]net.Conn, streams)
	for i := range conns {
		if conns[i], err = ln.Accept(); err != nil {
			return err
		}
	}
	start := time.Now()
	for s := range steps {
		for _, c := range conns {
			if _, err := c.Write(floorChunk); err != nil {
				return err
			}
		}
		time.Sleep(time.Until(start.Add(time.Duration(s+1) * step)))
	}
	for _, c := range conns {
		_ = c.Close()
	}
	return nil
}

// runFloorReader opens streams connections and reads each to EOF with one
// goroutine per connection and one clock read per read, as bench stamps
// chunks, checking that every byte arrived.
func runFloorReader(addr string, streams int) error {
	conns := make([]net.Conn, streams)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		conns[i] = c
	}
	var wg sync.WaitGroup
	errs := make([]error, streams)
	for i, c := range conns {
		wg.Go(func() {
			defer c.Close()
			buf := make([]byte, 4<<10)
			var total int
			var last time.Time
			for {
				n, err := c.Read(buf)
				if n > 0 {
					total += n
					last = time.Now()
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
			if total%len(floorChunk) != 0 || last.IsZero() {
				errs[i] = fmt.Errorf("stream %d brought %d bytes, not whole chunks", i, total)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// BenchmarkLoopbackFloor is the machine's floor under the emulator figures:
// what one token chunk costs over loopback TCP when neither side does more
// than the system calls, in two processes like serve and bench. By default
// 1,000 streams, one chunk each per 10 ms step, 500 steps. It reports each
// side's user+sys CPU per chunk and the cores that 100k chunks/s (1,000
// streams at a 10 ms ITL) take at that cost. Sizes:
// SERVEBENCH_E2E_STREAMS, SERVEBENCH_E2E_STEPS, SERVEBENCH_E2E_STEP_MS.
// Run with -benchtime 1x.
func BenchmarkLoopbackFloor(b *testing.B) {
	if testing.Short() {
		b.Skip("runs a multi-second load: not in -short")
	}
	streams := envInt("SERVEBENCH_E2E_STREAMS", 1000)
	steps := envInt("SERVEBENCH_E2E_STEPS", 500)
	step := time.Duration(envInt("SERVEBENCH_E2E_STEP_MS", 10)) * time.Millisecond
	for b.Loop() {
		load := loadAverage()
		writer := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
		writer.Env = append(os.Environ(), fmt.Sprintf("%s=writer:%d:%d:%s", floorEnv, streams, steps, step))
		stdout, err := writer.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		var writerErr bytes.Buffer
		writer.Stderr = &writerErr
		if err := writer.Start(); err != nil {
			b.Fatal(err)
		}
		addr, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			_ = writer.Process.Kill()
			_ = writer.Wait()
			b.Fatalf("floor writer: %v\n%s", err, writerErr.String())
		}
		reader := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
		reader.Env = append(os.Environ(), fmt.Sprintf("%s=reader:%s:%d", floorEnv, strings.TrimSpace(addr), streams))
		readerOut, readErr := reader.CombinedOutput()
		if readErr != nil {
			_ = writer.Process.Kill() // it may still wait for connections that will not come
		}
		writeErr := writer.Wait()
		if readErr != nil || writeErr != nil {
			b.Fatalf("floor reader: %v\n%s\nfloor writer: %v\n%s", readErr, readerOut, writeErr, writerErr.String())
		}
		chunks := float64(streams * steps)
		perChunk := func(p *os.ProcessState) float64 {
			ru := p.SysUsage().(*syscall.Rusage)
			return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e3 / chunks
		}
		w, r := perChunk(writer.ProcessState), perChunk(reader.ProcessState)
		b.ReportMetric(w, "writer-cpu-µs/chunk")
		b.ReportMetric(r, "reader-cpu-µs/chunk")
		b.ReportMetric((w+r)*1e5/1e6, "cores-per-100k-chunks/s")
		b.ReportMetric(load, "load1-before")
		b.ReportMetric(loadAverage(), "load1-after")
	}
}
