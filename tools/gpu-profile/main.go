// Command gpu-profile writes the measurement plan that profile.py runs on a
// GPU: the catalog models' linear-layer shapes, the layer models, and the
// grids. README.md beside this file says how a lease uses it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gpu-profile:", err)
		os.Exit(1)
	}
}

func run(args []string, w io.Writer) error {
	if len(args) == 0 || args[0] != "shapes" {
		return fmt.Errorf("usage: gpu-profile shapes [-models A,B] [-tp 1,4] [-sharded-layers M:TP,…] > plan.json")
	}
	fs := flag.NewFlagSet("shapes", flag.ContinueOnError)
	models := fs.String("models", "Llama-3.1-8B,Qwen3-8B,Qwen3-14B,Qwen3-32B,Llama-3.1-70B", "catalog models whose GEMMs are measured")
	layerModels := fs.String("layer-models", "Qwen3-14B,Qwen3-8B,Llama-3.1-8B", "models whose whole decoder layer is measured (must fit one GPU)")
	sharded := fs.String("sharded-layers", "Llama-3.1-70B:4,vllm/testdata/Llama-3.1-405B-FP8:8", "model:tp pairs measured as one tensor-parallel rank's decoder layer, all-reduces left out (a catalog name or a config.json path)")
	tps := fs.String("tp", "1,2,4,8", "tensor-parallel sizes whose per-GPU slices are measured (a model's smallest that fits 80 GB and up)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	p, err := makePlan(split(*models), split(*layerModels), split(*tps), split(*sharded))
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(p)
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
