package vllm

import (
	"fmt"
	"strings"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
)

// ExecutorBackend is --distributed-executor-backend: how the engine
// drives its GPU workers.
type ExecutorBackend string

const (
	// ExecutorUni: one GPU, the worker in the engine's own process.
	ExecutorUni ExecutorBackend = "uni"
	// ExecutorMP: one process per GPU on this node, fed through a
	// shared-memory message queue (shm_broadcast, PR #5399).
	ExecutorMP ExecutorBackend = "mp"
	// ExecutorRay: Ray actors, on any node of a Ray cluster.
	ExecutorRay ExecutorBackend = "ray"
)

var executorChoices = []string{"'ray'", "'mp'", "'uni'"}

// Per-step executor cost on the engine's critical path, beyond the mp
// baseline the host profiles were fitted with (doc.go, "Distributed
// executor"): shm_broadcast's enqueue is microseconds, inside SchedFixed.
const (
	// rayRemoteCallStep: V0 drives Ray workers with remote calls, ~1 ms
	// each (Ray's compiled-graph docs, ray PR #49115); vLLM PR #2201 saved
	// ≈2 ms a step at TP4 by replacing them with a compiled DAG.
	rayRemoteCallStep = 1000 * time.Microsecond
	// rayCompiledGraphStep: V1 runs Ray compiled graphs; PR #11107
	// measured them 0.7% slower than mp (9.427 s vs 9.357 s for 256
	// decode steps of Llama-3.1-8B TP2 on L4): ≈0.27 ms a step.
	rayCompiledGraphStep = 270 * time.Microsecond
)

// v0StepInputTensors: before every step V0's driver worker broadcasts the
// model input to the rest of its TP group with broadcast_tensor_dict,
// which sends the metadata through the shared-memory queue and each
// non-empty GPU tensor with its own torch.distributed.broadcast (NCCL)
// (GroupCoordinator.broadcast_tensor_dict at v0.6.1.post2, commit
// 9ba0817f; LocalOrDistributedWorkerBase.execute_model calls it on every
// step, and MultiStepWorker on every step of a group too). The GPU tensors
// of ModelInputForGPUWithSamplingMetadata there: input_tokens,
// input_positions, selected_token_indices and FlashAttentionMetadata's
// slot_mapping, seq_lens_tensor, query_start_loc, seq_start_loc,
// context_lens_tensor and block_tables [assumption: the same nine in
// every V0 release; a multi-step group's later steps add
// last_sampled_token_ids, not counted]. perf.Deployment.StepInputBroadcasts.
const v0StepInputTensors = 9

// mpMultiNodeSince: the mp backend spans nodes (--nnodes, --node-rank)
// from the 0.11 line; before, vLLM needs Ray for more than one node.
var mpMultiNodeSince = Release{0, 11, 0}

// mpDefaultSince: PR #5230 ("Default to multiprocessing for single-node
// distributed case", merged 2024-06-11 as commit 99dac09, the day after
// the "Bump version to v0.5.0" commit; v0.5.0.post1's distributed-serving
// docs describe the mp default) made mp the single-node default
// [approximate release: 0.5.0 itself may predate it]. Before, several GPUs ran on Ray: the only backend
// until PR #4539 added mp in 0.4.3, whose default stayed Ray wherever Ray
// was installed, and vLLM's CUDA requirements pulled in ray >= 2.9.
var mpDefaultSince = Release{0, 5, 0}

// resolveExecutor picks the backend as vLLM's ParallelConfig does: uni
// for one GPU, ray when the world spans nodes or the release predates mp
// as the default, mp otherwise. It reports whether the choice was a
// default (vLLM then logs "Defaulting to use ... for distributed
// inference").
func resolveExecutor(p Profile, backend string, world, nodes int) (ExecutorBackend, bool, error) {
	b := ExecutorBackend(strings.ToLower(strings.TrimSpace(backend)))
	defaulted := b == ""
	switch {
	case defaulted && world <= 1:
		return ExecutorUni, true, nil
	case defaulted && (nodes > 1 || p.Release.less(mpDefaultSince)):
		return ExecutorRay, true, nil
	case defaulted:
		return ExecutorMP, true, nil
	case b != ExecutorUni && b != ExecutorMP && b != ExecutorRay:
		return "", false, InvalidChoice("distributed-executor-backend", "'"+backend+"'", executorChoices)
	case b == ExecutorUni && world > 1:
		return "", false, optionError("distributed_executor_backend",
			"distributed_executor_backend 'uni' runs a single GPU, but world_size is %d; use 'mp' on one node or 'ray' across nodes", world)
	case b == ExecutorMP && nodes > 1 && p.Release.less(mpMultiNodeSince):
		return "", false, optionError("distributed_executor_backend",
			"distributed_executor_backend 'mp' cannot span %d nodes in vLLM %s; use 'ray' (multi-node mp with --nnodes/--node-rank came in %s)", nodes, p.Release, mpMultiNodeSince)
	}
	return b, false, nil
}

// executorStepCost is the backend's extra host time per engine step on a
// TP group of tp ranks: Ray's calls, and the wait for the workers to see
// the step's metadata in the releases whose queue readers sleep.
func executorStepCost(p Profile, b ExecutorBackend, tp int) time.Duration {
	wait := shmReaderWait(p.Release, tp)
	if b != ExecutorRay {
		return wait
	}
	if p.Engine == engine.V1 {
		return wait + rayCompiledGraphStep
	}
	return wait + rayRemoteCallStep
}

// The shared-memory queue (shm_broadcast's MessageQueue, PR #5399) that
// carries each step's metadata from the driver to its TP group's other
// workers: from PR #5754 (2024-06-22, before 0.5.1's version bump of
// 07-05) a reader that finds no new block calls time.sleep(1e-7) and
// polls again, until PR #9994 (merged 2024-11-04, so 0.6.4 [inferred from
// the dates: 0.6.3.post1 came out in October, 0.6.4 in mid-November])
// replaced the sleep with os.sched_yield. Linux rounds such a sleep up to the thread's timer
// slack (50 µs by default): time.sleep(1e-7) took shmReaderPoll on this
// project's measuring machine (Python 3.11, timerslack_ns 50000:
// python3 -c 'import time; t=time.perf_counter(); [time.sleep(1e-7) for _
// in range(2000)]; print((time.perf_counter()-t)/2000)'). A block written
// at a random point of the readers' polls is seen after a wait uniform
// over the poll, and the step cannot start before the last of the tp−1
// workers joins the input broadcast: the expected longest of tp−1 such
// waits is shmReaderPoll·(tp−1)/tp. V0 ran every step so; a multi-step
// group pays it once, when the driver stops running ahead of the GPU
// (sim's per-step schedule terms are spread over the group).
var (
	shmReaderSleepSince = Release{0, 5, 1}
	shmReaderYieldSince = Release{0, 6, 4}
)

const shmReaderPoll = 59 * time.Microsecond

// shmReaderWait is the expected wait for the slowest of tp−1 sleeping
// queue readers; 0 outside the releases whose readers sleep, and on one
// GPU [approximation: it is the kernel's timer slack, yet --host-speed
// scales it with the other per-step terms].
func shmReaderWait(rel Release, tp int) time.Duration {
	if tp < 2 || rel.less(shmReaderSleepSince) || !rel.less(shmReaderYieldSince) {
		return 0
	}
	return shmReaderPoll * time.Duration(tp-1) / time.Duration(tp)
}

// LogLine is one startup line and whether vLLM logs it as a warning.
type LogLine struct {
	Warning bool
	Text    string
}

// DistributedLines are the startup lines a multi-GPU vLLM logs about its
// executor, the Ray cluster, where each rank runs and which NCCL transport
// each communicator uses, with a warning when tensor parallelism crosses
// nodes without RDMA. A single-GPU deployment logs none.
func DistributedLines(r *Resolved) []LogLine {
	d := r.Deployment
	p := d.Placement()
	world := p.TensorParallel * p.PipelineParallel
	if world <= 1 {
		return nil
	}
	var out []LogLine
	info := func(format string, args ...any) { out = append(out, LogLine{Text: fmt.Sprintf(format, args...)}) }
	if r.ExecutorDefaulted {
		info("Defaulting to use %s for distributed inference", r.Executor)
	}
	if r.Executor == ExecutorRay {
		info("Connected to Ray cluster (modelled): %d node(s), %d GPUs; placement group of %d bundles {'GPU': 1.0}",
			p.Nodes, world, world)
		if r.Profile.Engine == engine.V1 {
			info("Using Ray compiled graphs for the workers (VLLM_USE_RAY_COMPILED_DAG=1)")
		}
	}
	info("world_size=%d (tensor_parallel_size=%d x pipeline_parallel_size=%d) on %d node(s), %d GPU(s) per node",
		world, p.TensorParallel, p.PipelineParallel, p.Nodes, p.GPUsPerNode)
	for n := range p.Nodes {
		first, last := n*p.GPUsPerNode, (n+1)*p.GPUsPerNode-1
		info("node %d: ranks %d-%d (PP stage %s, TP ranks %s)", n, first, last,
			span(first/p.TensorParallel, last/p.TensorParallel), span(first%p.TensorParallel, last%p.TensorParallel))
	}
	if p.TensorParallel > 1 {
		c := d.TPCollective()
		l := c.Intra
		if c.Nodes > 1 {
			l = c.Inter
		}
		// Rank 0's ring neighbour: the next rank, or with TP across nodes
		// the first rank of the next node, whichever the ring crosses.
		next := 1
		if c.Nodes > 1 {
			next = p.GPUsPerNode
		}
		info("NCCL INFO TP group of %d ranks on %d node(s): Channel 00 : 0[0] -> %d[%d] via %s (%s: %.1f GB/s bus bandwidth, %v per message, %s)",
			c.Ranks, c.Nodes, next, next%p.GPUsPerNode, l.Transport, l.Name, l.Bandwidth/1e9, l.Latency, algoNote(l, c))
		if b := d.NVLSBytes(); b > 0 {
			heads := b / int64(d.NVLSCommunicators) / perf.NVLSBytesPerRank
			info("NCCL INFO NVLS on the TP group: nHeads %d nvlsPerRankSize %d nvlsTotalSize %d, on each of %d communicators (%.2f GiB per GPU, counted by the memory profile)",
				heads, perf.NVLSBytesPerRank, heads*perf.NVLSBytesPerRank, d.NVLSCommunicators, float64(b)/gibibyte)
		}
	}
	for s := range p.PipelineParallel - 1 {
		l := d.StageLink(s)
		from, to := s*p.TensorParallel, (s+1)*p.TensorParallel
		info("NCCL INFO PP send stage %d -> %d: %d[%d] -> %d[%d] via %s (%s)", s, s+1,
			from, from%p.GPUsPerNode, to, to%p.GPUsPerNode, l.Transport, l.Name)
	}
	if p.TensorParallel > 1 && p.TPNodes() > 1 && !d.NodeLink.RDMA {
		out = append(out, LogLine{Warning: true, Text: fmt.Sprintf(
			"Tensor parallel group spans %d nodes over %s (%s) without RDMA: every layer's all-reduces cross TCP, which is slow. vLLM advises tensor parallelism within a node and pipeline parallelism across nodes, and InfiniBand or RoCE between them (NCCL_DEBUG=TRACE should show NET/IB, not NET/Socket).",
			p.TPNodes(), d.NodeLink.Transport, d.NodeLink.Name)})
	}
	return out
}

func span(a, b int) string {
	if a == b {
		return fmt.Sprint(a)
	}
	return fmt.Sprintf("%d-%d", a, b)
}

// algoNote says which all-reduce algorithm NCCL's tuner will pick: only
// a communicator over several nodes with more than one rank per hop has a
// tree that can beat the ring.
func algoNote(l perf.Link, c perf.Collective) string {
	switch {
	case l.Algorithm != perf.AlgoAuto:
		return string(l.Algorithm) + " forced"
	case c.Nodes > 1 && c.Ranks > 2:
		return "tree for small messages, ring for large"
	default:
		return "ring"
	}
}
