#!/bin/sh
# Re-measures vLLM's per-step host work on this CPU and the profile run's
# sampler peak, and regenerates vllm/hosttime_measured.go from them.
# Usage: tools/vllm-hosttime/regen.sh VLLM_GIT_DIR
#   VLLM_GIT_DIR: any git directory holding vLLM's history (a clone or a
#   bare mirror); the commits below are upstream vLLM commits.
# PYTHON (default python3) must import torch (Debian: python3-torch).
# SAMPLER_DIR: the sampler/ folder of a GPU lease (tools/gpu-profile/lease.sh);
# SAMPLER_TIME_DIR: its sampler-time/ folder (tools/vllm-oracle/sampler_time.py).
# Takes about 15 minutes on an idle core; the figures move with the CPU
# and its load (README.md).
set -eu
git_dir=$1
sampler_dir=${SAMPLER_DIR:?set SAMPLER_DIR to a GPU lease\'s sampler folder (sampler_peak.py --device cuda)}
sampler_time_dir=${SAMPLER_TIME_DIR:?set SAMPLER_TIME_DIR to a GPU lease\'s sampler-time folder (sampler_time.py)}
python=${PYTHON:-python3}
root=$(git rev-parse --show-toplevel)
here=$root/tools/vllm-hosttime
work=${TMPDIR:-/tmp}/vllm-hosttime
rm -rf "$work"
mkdir -p "$work/out"
while read -r release commit engines; do
	src=$work/vllm-$release
	mkdir -p "$src"
	git --git-dir="$git_dir" archive "$commit" vllm | tar -x -C "$src"
	for engine in $(echo "$engines" | tr , ' '); do
		"$python" -W ignore "$here/hosttime.py" --vllm-src "$src" --release "$release" \
			--commit "$commit" --engine "$engine" --passes "${PASSES:-3}" \
			--out "$work/out/host-$release-$engine.json"
	done
done <<LIST
v0.5.4 4db5176d9758b720b05460c50ace3c01026eb158 v0
v0.6.1.post2 9ba0817ff1eb514f51cc6de9cb8e16c98d6ee44f v0
main-98c89e16 98c89e16ff834f1c9f1c465e7342c5353e0eb627 v0,v1
LIST
# The sampler's peaks and times come from a GPU (tools/gpu-profile/lease.sh's
# sampler/ and sampler-time/).
cp "$sampler_dir"/sampler-*.json "$work/out/"
cp "$sampler_time_dir"/time-*.json "$work/out/"
"$python" "$here/gen_go.py" "$work/out" >"$root/vllm/hosttime_measured.go"
gofmt -w "$root/vllm/hosttime_measured.go"
