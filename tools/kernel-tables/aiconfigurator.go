package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	"github.com/parquet-go/parquet-go"
)

// aiconfigurator is a checkout of github.com/ai-dynamo/aiconfigurator
// (Apache-2.0): its per-GPU performance databases, collected on real GPUs.
type aiconfigurator struct {
	root, commit string
}

const aicData = "aic-core/src/aiconfigurator_core/systems/data"

// aicGPU says which of a system's collections become servebench's tables:
// vLLM's own kernels wherever the database has them.
type aicGPU struct {
	name      string // servebench's catalog name
	system    string // aiconfigurator's system directory
	vllm      string // vLLM version of the GEMM, attention and custom all-reduce data
	attention string // the attention kernel_source measured for that version
	nccl      string // NCCL directory
	dtypes    []string
	// fp8 is the vLLM version whose fp8 GEMMs are taken: the collection
	// that names vLLM's per-tensor FP8 kernel (CUTLASS scaled_mm), where
	// one does; 0.14.0's unnamed fp8 sweep is slower than its bf16 one.
	fp8 string
}

var aicGPUs = []aicGPU{
	{"H100-SXM", "h100_sxm", "0.14.0", "vllm_flash_attn", "2.27.3", []string{"bfloat16", "fp8"}, "0.24.0"},
	{"H200", "h200_sxm", "0.14.0", "vllm_flash_attn", "2.26.2", []string{"bfloat16", "fp8"}, "0.24.0"},
	{"A100-80GB", "a100_sxm", "0.14.0", "vllm_flash_attn", "2.27.3", []string{"bfloat16"}, ""},
	{"L40S", "l40s", "0.14.0", "vllm_flash_attn", "2.27.3", []string{"bfloat16", "fp8"}, "0.24.0"},
	{"B200", "b200_sxm", "0.19.0", "vllm_flashinfer", "2.27.3", []string{"bfloat16", "fp8"}, "0.24.0"},
}

// The grid points kept. GEMM: every M the H100, H200 and B200 sweeps share
// up to 8192, and N, K from 256 to 16384 in steps of at most 1.5x plus
// 65536 (lm_head-sized outputs); smaller N or K are extrapolated.
var (
	gemmM  = floats(1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 512, 768, 1024, 2048, 4096, 8192)
	gemmNK = floats(256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 65536)
	// Prefill attention: prompt lengths 16 to 16384, batches 1 to 256,
	// query heads 1 to 64 (each with the KV heads of contextKVHeads).
	contextISL   = floats(16, 32, 64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384)
	contextBatch = powersOfTwo(1, 256)
	contextHeads = floats(1, 2, 4, 8, 16, 32, 64)
	// Decode attention: contexts 2 to 131072, batches 1 to 2048, KV heads
	// 1 to 8 with four query heads each.
	decodeContext = powersOfTwo(2, 131072)
	decodeBatch   = powersOfTwo(1, 2048)
	decodeKVHeads = floats(1, 2, 4, 8)
	commRanks     = floats(2, 4, 8)
)

// contextKVHeads is the KV-head count measured with each query-head count:
// a GQA group of 4 where the sweep has it (8 at 64 heads, whose sweep has
// 1, 2, 4, 8 or 64 KV heads), one KV head below 8 query heads.
var contextKVHeads = map[float64]float64{1: 1, 2: 1, 4: 1, 8: 2, 16: 4, 32: 8, 64: 8}

func (a aiconfigurator) source(rel string) string {
	return fmt.Sprintf("github.com/ai-dynamo/aiconfigurator@%s %s/%s", a.commit, aicData, rel)
}

func (a aiconfigurator) header(kind, gpu, rel, device, sel string) [][2]string {
	return [][2]string{
		{"kind", kind}, {"gpu", gpu}, {"device", device},
		{"source", a.source(rel)},
		{"license", "Apache-2.0 (NVIDIA CORPORATION & AFFILIATES; see NOTICE beside this file)"},
		{"select", sel}, {"unit", "microseconds"},
	}
}

func (a aiconfigurator) writeAll(out string) error {
	for _, g := range aicGPUs {
		if err := a.writeGEMM(out, g); err != nil {
			return err
		}
		if err := a.writeAttention(out, g); err != nil {
			return err
		}
		if err := a.writeComm(out, g); err != nil {
			return err
		}
		if err := a.writeMoE(out, g); err != nil {
			return err
		}
		if err := a.writeMLA(out, g); err != nil {
			return err
		}
	}
	return nil
}

func fileStem(gpu string) string {
	b := []byte(gpu)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func (a aiconfigurator) writeGEMM(out string, g aicGPU) error {
	for _, dtype := range g.dtypes {
		version := g.vllm
		if dtype == "fp8" && g.fp8 != "" {
			version = g.fp8
		}
		rel := filepath.Join(g.system, "gemm", "vllm", version, "gemm_perf.parquet")
		rows, err := readParquet(filepath.Join(a.root, aicData, rel))
		if err != nil {
			return err
		}
		grid := newGrid(axis{"m", gemmM}, axis{"n", gemmNK}, axis{"k", gemmNK})
		device, kernel := "", ""
		for _, r := range rows {
			if r["gemm_dtype"] != dtype {
				continue
			}
			// 0.14.0 names every kernel vllm_default; later collections
			// name the kernel vLLM's linear method picked (cuBLAS through
			// torch for bf16, CUTLASS scaled_mm for per-tensor fp8).
			switch r["kernel_source"] {
			case "vllm_default", "torch.nn.functional.linear", "CutlassFP8ScaledMMLinearKernel":
			default:
				continue
			}
			if grid.set([]float64{num(r["m"]), num(r["n"]), num(r["k"])}, 1000*num(r["latency"])) {
				device, kernel = r["device"], r["kernel_source"]
			}
		}
		changed := grid.envelope()
		short := map[string]string{"bfloat16": "bf16", "fp8": "fp8"}[dtype]
		t := table{
			file: fmt.Sprintf("gemm-%s-%s.txt", fileStem(g.name), short),
			header: append(a.header("gemm", g.name, rel, device,
				fmt.Sprintf("framework vllm %s, kernel_source %s, gemm_dtype %s", version, kernel, dtype)),
				[2]string{"dtype", short},
				[2]string{"cleaning", fmt.Sprintf("monotone envelope: %d of %d cells took a larger GEMM's lower time", changed, grid.measured())}),
			grid: grid,
		}
		if err := t.write(out); err != nil {
			return err
		}
	}
	return nil
}

func (a aiconfigurator) writeAttention(out string, g aicGPU) error {
	dir := filepath.Join(g.system, "attention", "vllm", g.vllm)
	ctxRel := filepath.Join(dir, "context_attention_perf.parquet")
	rows, err := readParquet(filepath.Join(a.root, aicData, ctxRel))
	if err != nil {
		return err
	}
	ctx := newGrid(axis{"isl", contextISL}, axis{"batch", contextBatch}, axis{"heads", contextHeads})
	ctxFP8 := map[[3]float64]float64{}
	device := ""
	for _, r := range rows {
		if r["head_dim"] != "128" {
			continue
		}
		h, kv := num(r["num_heads"]), num(r["num_key_value_heads"])
		if contextKVHeads[h] != kv {
			continue
		}
		key := [3]float64{num(r["isl"]), num(r["batch_size"]), h}
		lat := 1000 * num(r["latency"])
		switch {
		case r["kv_cache_dtype"] == "fp8":
			ctxFP8[key] = lat
		case r["kernel_source"] == g.attention:
			if ctx.set(key[:], lat) {
				device = r["device"]
			}
		}
	}
	ctxRatio := fp8Ratio(ctx, ctxFP8)
	changed := ctx.envelope()
	header := append(a.header("attention-prefill", g.name, ctxRel, device,
		fmt.Sprintf("framework vllm %s, kernel_source %s, head_dim 128, kv_cache_dtype bfloat16, KV heads per query heads %s",
			g.vllm, g.attention, kvHeadsText())),
		[2]string{"head_dim", "128"},
		[2]string{"cleaning", fmt.Sprintf("monotone envelope: %d of %d cells took a larger problem's lower time", changed, ctx.measured())})
	if ctxRatio > 0 {
		header = append(header, [2]string{"fp8_kv_ratio", strconv.FormatFloat(ctxRatio, 'f', 3, 64) + " (median fp8-KV / bf16-KV latency over the cells measured both ways)"})
	}
	if err := (table{file: "attention-prefill-" + fileStem(g.name) + ".txt", header: header, grid: ctx}).write(out); err != nil {
		return err
	}

	genRel := filepath.Join(dir, "generation_attention_perf.parquet")
	rows, err = readParquet(filepath.Join(a.root, aicData, genRel))
	if err != nil {
		return err
	}
	gen := newGrid(axis{"context", decodeContext}, axis{"batch", decodeBatch}, axis{"kv_heads", decodeKVHeads})
	genFP8 := map[[3]float64]float64{}
	for _, r := range rows {
		if r["head_dim"] != "128" || r["kernel_source"] != g.attention && r["kv_cache_dtype"] != "fp8" {
			continue
		}
		h, kv := num(r["num_heads"]), num(r["num_key_value_heads"])
		if h != 4*kv {
			continue
		}
		// step s is the s-th generated token: its query attends to the
		// one-token prompt and s earlier outputs plus itself.
		key := [3]float64{num(r["step"]) + 1, num(r["batch_size"]), kv}
		lat := 1000 * num(r["latency"])
		if r["kv_cache_dtype"] == "fp8" {
			genFP8[key] = lat
		} else {
			gen.set(key[:], lat)
		}
	}
	genRatio := fp8Ratio(gen, genFP8)
	changed = gen.envelope()
	header = append(a.header("attention-decode", g.name, genRel, device,
		fmt.Sprintf("framework vllm %s, kernel_source %s, head_dim 128, kv_cache_dtype bfloat16, 4 query heads per KV head, context = step + 1",
			g.vllm, g.attention)),
		[2]string{"head_dim", "128"},
		[2]string{"cleaning", fmt.Sprintf("monotone envelope: %d of %d cells took a larger problem's lower time", changed, gen.measured())})
	if genRatio > 0 {
		header = append(header, [2]string{"fp8_kv_ratio", strconv.FormatFloat(genRatio, 'f', 3, 64) + " (median fp8-KV / bf16-KV latency over the cells measured both ways)"})
	}
	return table{file: "attention-decode-" + fileStem(g.name) + ".txt", header: header, grid: gen}.write(out)
}

func kvHeadsText() string {
	keys := make([]float64, 0, len(contextKVHeads))
	for k := range contextKVHeads {
		keys = append(keys, k)
	}
	sort.Float64s(keys)
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("%g:%g", contextKVHeads[k], k)
	}
	return s
}

// fp8Ratio is the median of fp8-KV over bf16-KV latency where both exist.
func fp8Ratio(g *grid, fp8 map[[3]float64]float64) float64 {
	var r []float64
	idx := make([]int, 3)
	for o, v := range g.values {
		if math.IsNaN(v) {
			continue
		}
		g.unflatten(o, idx)
		key := [3]float64{g.axes[0].values[idx[0]], g.axes[1].values[idx[1]], g.axes[2].values[idx[2]]}
		if f, ok := fp8[key]; ok && v > 0 {
			r = append(r, f/v)
		}
	}
	if len(r) == 0 {
		return 0
	}
	slices.Sort(r)
	return r[len(r)/2]
}

// commBytes: 512 B to 512 MiB, the sizes both NCCL and vLLM's custom
// all-reduce sweeps cover.
var commBytes = powersOfTwo(512, 512<<20)

func (a aiconfigurator) writeComm(out string, g aicGPU) error {
	rel := filepath.Join(g.system, "comm", "nccl", g.nccl, "nccl_perf.parquet")
	rows, err := readParquet(filepath.Join(a.root, aicData, rel))
	if err != nil {
		return err
	}
	for _, op := range []string{"all_reduce", "all_gather"} {
		grid := newGrid(axis{"ranks", commRanks}, axis{"bytes", commBytes})
		device, version := "", ""
		for _, r := range rows {
			if r["op_name"] != op || r["nccl_dtype"] != "half" {
				continue
			}
			// message_size counts fp16 elements; nccl-tests' size (the
			// whole output buffer for all_gather) is twice that in bytes.
			if grid.set([]float64{num(r["num_gpus"]), 2 * num(r["message_size"])}, 1000*num(r["latency"])) {
				device, version = r["device"], r["version"]
			}
		}
		changed := grid.envelope()
		t := table{
			file: fmt.Sprintf("nccl-%s-%s.txt", map[string]string{"all_reduce": "allreduce", "all_gather": "allgather"}[op], fileStem(g.name)),
			header: append(a.header("nccl-"+op, g.name, rel, device,
				fmt.Sprintf("nccl-tests %s_perf (NCCL %s), dtype half, out-of-place time; bytes = the size nccl-tests reports (the whole output for all_gather); one node", op, version)),
				[2]string{"cleaning", fmt.Sprintf("monotone envelope: %d of %d cells took a larger message's lower time", changed, grid.measured())}),
			grid: grid,
		}
		if err := t.write(out); err != nil {
			return err
		}
	}
	rel = filepath.Join(g.system, "comm", "vllm", g.vllm, "custom_allreduce_perf.parquet")
	rows, err = readParquet(filepath.Join(a.root, aicData, rel))
	if err != nil {
		return err
	}
	grid := newGrid(axis{"ranks", commRanks}, axis{"bytes", commBytes})
	device := ""
	for _, r := range rows {
		if r["backend"] != "vllm_graph" {
			continue
		}
		if grid.set([]float64{num(r["num_gpus"]), 2 * num(r["message_size"])}, 1000*num(r["latency"])) {
			device = r["device"]
		}
	}
	changed := grid.envelope()
	return table{
		file: "custom-allreduce-" + fileStem(g.name) + ".txt",
		header: append(a.header("custom-allreduce", g.name, rel, device,
			fmt.Sprintf("vLLM %s custom all-reduce replayed from a CUDA graph (backend vllm_graph), bfloat16; bytes = 2 x elements", g.vllm)),
			[2]string{"cleaning", fmt.Sprintf("monotone envelope: %d of %d cells took a larger message's lower time", changed, grid.measured())}),
		grid: grid,
	}.write(out)
}

// readParquet reads every row of a parquet file as column name -> text.
func readParquet(path string) ([]map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var names []string
	for _, c := range pf.Schema().Fields() {
		names = append(names, c.Name())
	}
	r := parquet.NewReader(f)
	buf := make([]parquet.Row, 512)
	var out []map[string]string
	for {
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			m := make(map[string]string, len(names))
			for _, v := range row {
				if c := v.Column(); c >= 0 && c < len(names) && !v.IsNull() {
					m[names[c]] = v.String()
				}
			}
			out = append(out, m)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
}

func num(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}
