#!/bin/sh
# Regenerates the oracle scenarios and every committed trace.
# Usage: tools/vllm-oracle/regen.sh VLLM_GIT_DIR
#   VLLM_GIT_DIR: any git directory holding vLLM's history (a clone, or a
#   bare mirror); the commits below are upstream vLLM commits.
# PYTHON (default python3) must import torch (Debian: python3-torch).
set -eu
git_dir=$1
python=${PYTHON:-python3}
root=$(git rev-parse --show-toplevel)
here=$root/tools/vllm-oracle
scenarios=$root/engine/testdata/oracle/scenarios
"$python" "$here/make_scenarios.py" "$scenarios"
while read -r release commit; do
	src=${TMPDIR:-/tmp}/vllm-$release
	rm -rf "$src"
	mkdir -p "$src"
	git --git-dir="$git_dir" archive "$commit" vllm | tar -x -C "$src"
	out=$root/engine/testdata/oracle/$release
	rm -f "$out"/*.json.gz
	"$python" "$here/oracle.py" --vllm-src "$src" --release "$release" \
		--commit "$commit" --scenarios "$scenarios" --out "$out"
done <<LIST
v0.5.4 4db5176d9758b720b05460c50ace3c01026eb158
v0.6.1.post2 9ba0817ff1eb514f51cc6de9cb8e16c98d6ee44f
main-98c89e16 98c89e16ff834f1c9f1c465e7342c5353e0eb627
LIST
