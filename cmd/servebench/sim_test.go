package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestSimIsDeterministic(t *testing.T) {
	args := []string{"sim", "--model", "Qwen/Qwen2-7B", "--gpu", "A100-80GB", "--num-prompts", "300", "--request-rate", "20",
		"--seed", "7", "--random-input-len", "512", "--random-output-len", "64", "--random-range-ratio", "0.5"}
	a, _, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("same flags and seed gave different output:\n%s\n---\n%s", a, b)
	}
	c, _, err := runCLI(t, append(args[:len(args):len(args)], "--seed", "8")...)
	if err != nil {
		t.Fatal(err)
	}
	if a == c {
		t.Fatal("a different seed gave identical output")
	}
}

func TestSimWhatIfAndThroughputLine(t *testing.T) {
	base := []string{"sim", "--model", "Llama-3-8B", "--gpu", "H100", "--num-prompts", "400", "--throughput",
		"--random-input-len", "200", "--random-output-len", "200", "--engine", "v0", "--gpu-memory-utilization", "0.3", "--swap-space", "16"}
	lines := map[string]string{}
	for _, mode := range []string{"recompute", "swap"} {
		out, _, err := runCLI(t, append(base, "--preemption-mode", mode, "--max-num-seqs", "256")...)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		i := strings.Index(out, "Throughput: ")
		if i < 0 {
			t.Fatalf("%s: no Throughput line:\n%s", mode, out)
		}
		lines[mode] = strings.SplitN(out[i:], "\n", 2)[0]
		for _, want := range []string{"requests/s", "tokens/s, Delay ", " ms, n_step: "} {
			if !strings.Contains(lines[mode], want) {
				t.Errorf("%s: line %q lacks %q", mode, lines[mode], want)
			}
		}
	}
	if lines["swap"] == lines["recompute"] {
		t.Errorf("swap and recompute predicted the same run: %s", lines["swap"])
	}
}

func TestSimSavesResultWithEngineStats(t *testing.T) {
	dir := t.TempDir()
	_, _, err := runCLI(t, "sim", "--model", "Qwen/Qwen2-0.5B", "--gpu", "L4", "--num-prompts", "50", "--request-rate", "5",
		"--save-result", "--result-dir", dir, "--result-filename", "r.json", "--max-concurrency", "4")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	eng, ok := res["engine"].(map[string]any)
	if !ok || eng["steps"].(float64) <= 0 || eng["gpu"] != "L4" {
		t.Fatalf("engine section: %v", res["engine"])
	}
	if res["completed"] != 50.0 || res["max_concurrency"] != 4.0 || res["backend"] != "sim" {
		t.Fatalf("completed %v max_concurrency %v backend %v", res["completed"], res["max_concurrency"], res["backend"])
	}
	if _, err := os.Stat(filepath.Join(dir, "r.records.jsonl")); err != nil {
		t.Fatalf("no records file: %v", err)
	}
}

func TestSimRejectsWhatVLLMRejects(t *testing.T) {
	_, _, err := runCLI(t, "sim", "--model", "Llama-3-70B", "--gpu", "A100-80GB", "--num-prompts", "1")
	if err == nil || !strings.Contains(err.Error(), "raising gpu_memory_utilization cannot help. Use -tp 4") {
		t.Fatalf("Llama-3-70B on one A100-80GB: err = %v, want the weights-exceed-the-GPU error suggesting -tp 4", err)
	}
	_, _, err = runCLI(t, "sim", "--engine", "v0", "--max-model-len", "4096", "--max-num-batched-tokens", "2048", "--num-prompts", "1")
	if err == nil || !strings.Contains(err.Error(), "max_num_batched_tokens (2048) is smaller than max_model_len (4096)") {
		t.Fatalf("err = %v, want vLLM's scheduler config error", err)
	}
}

func TestSimAcceptsVLLMShortParallelFlags(t *testing.T) {
	one, _, err := runCLI(t, "sim", "--model", "Llama-3-8B", "--gpu", "H100", "--num-prompts", "20", "--random-output-len", "32")
	if err != nil {
		t.Fatal(err)
	}
	two, _, err := runCLI(t, "sim", "--model", "Llama-3-8B", "--gpu", "H100", "--num-prompts", "20", "--random-output-len", "32", "-tp", "2", "--link", "ethernet")
	if err != nil {
		t.Fatal(err)
	}
	if one == two {
		t.Fatal("-tp 2 over ethernet predicted the same run as TP 1")
	}
}

// TestSimThroughVLLMBenchClient: --client vllm-bench times what vLLM's
// one-thread benchmark client observes, so a burst of many short
// streams queues in it (later first tokens, the same tokens); an unknown
// client is refused before anything runs.
func TestSimThroughVLLMBenchClient(t *testing.T) {
	base := []string{"sim", "--model", "Qwen/Qwen2-0.5B", "--gpu", "H100", "--num-prompts", "400", "--seed", "3",
		"--random-input-len", "64", "--random-output-len", "64", "--save-result", "--result-dir", t.TempDir()}
	results := map[string]map[string]any{}
	for _, client := range []string{"none", "vllm-bench"} {
		if _, _, err := runCLI(t, append(base, "--client", client, "--result-filename", client+".json")...); err != nil {
			t.Fatalf("--client %s: %v", client, err)
		}
		raw, err := os.ReadFile(filepath.Join(base[len(base)-1], client+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var res map[string]any
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		results[client] = res
	}
	server, client := results["none"], results["vllm-bench"]
	if client["total_output_tokens"] != server["total_output_tokens"] || client["completed"] != 400.0 {
		t.Errorf("the client changed what was generated: %v vs %v tokens", client["total_output_tokens"], server["total_output_tokens"])
	}
	if c, s := client["mean_ttft_ms"].(float64), server["mean_ttft_ms"].(float64); !(c > s) {
		t.Errorf("mean TTFT through vLLM's client %.2f ms, server's %.2f ms: a 400-request burst must queue in its one thread", c, s)
	}
	_, _, err := runCLI(t, "sim", "--client", "locust", "--num-prompts", "1")
	if err == nil || !strings.Contains(err.Error(), `--client "locust": use none or vllm-bench`) {
		t.Errorf("unknown client: %v", err)
	}
}

// TestSimReplaysLengthsFromAResult: with --random-lengths-from, sim sends
// each request of the result JSON with its own input and output length,
// so the totals are the file's sums (a 0-token reply still generates one
// token), and asking for more requests than the file has is refused.
func TestSimReplaysLengthsFromAResult(t *testing.T) {
	const file = "testdata/lengths_small.json"
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var lens struct {
		InputLens  []int `json:"input_lens"`
		OutputLens []int `json:"output_lens"`
	}
	if err := json.Unmarshal(raw, &lens); err != nil {
		t.Fatal(err)
	}
	wantIn, wantOut, zeros := 0, 0, 0
	for i := range lens.InputLens {
		wantIn += lens.InputLens[i]
		wantOut += max(1, lens.OutputLens[i])
		if lens.OutputLens[i] == 0 {
			zeros++
		}
	}
	if n := len(lens.InputLens); n < 2 || n != len(lens.OutputLens) || zeros == 0 {
		t.Fatalf("%s: %d input and %d output lengths, %d zero outputs: want a few of each, some zero", file, n, len(lens.OutputLens), zeros)
	}
	n := strconv.Itoa(len(lens.InputLens))
	args := []string{"sim", "--model", defaultEmbeddedModel, "--gpu", "H100", "--dataset-name", "random",
		"--random-lengths-from", file, "--throughput"}
	out, _, err := runCLI(t, append(args, "--num-prompts", n)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("Successful requests:                     %-10s\n", n),
		fmt.Sprintf("Total input tokens:                      %-10d\n", wantIn),
		fmt.Sprintf("Total generated tokens:                  %-10d\n", wantOut),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	_, _, err = runCLI(t, append(args, "--num-prompts", "2000")...)
	want := fmt.Sprintf(`--num-prompts 2000 but %q has %s requests; pass --num-prompts %s or less`, file, n, n)
	if err == nil || err.Error() != want {
		t.Fatalf("2000 prompts from a file of %s: error %v, want %q", n, err, want)
	}
}

// TestSimReplaysRepliesWithNoFirstToken: a result file whose client (vLLM's
// of 2024) recorded no first token for an empty reply (ttfts 0.0, 0
// tokens) is replayed that way under --client vllm-bench; the server's
// view (--client none) still counts the one token generated.
func TestSimReplaysRepliesWithNoFirstToken(t *testing.T) {
	file := filepath.Join(t.TempDir(), "run.json")
	data := `{"input_lens": [40, 50, 60, 70], "output_lens": [0, 5, 0, 7], "ttfts": [0.0, 0.3, 0.2, 0.1]}`
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		client    string
		generated int
	}{
		{"vllm-bench", 13}, // request 0 counts 0 tokens; request 2's client timed a first token
		{"none", 14},
	} {
		out, _, err := runCLI(t, "sim", "--model", defaultEmbeddedModel, "--gpu", "H100", "--dataset-name", "random",
			"--random-lengths-from", file, "--num-prompts", "4", "--client", c.client)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("Total generated tokens:                  %-10d\n", c.generated); !strings.Contains(out, want) {
			t.Errorf("--client %s: output lacks %q:\n%s", c.client, want, out)
		}
	}
}
