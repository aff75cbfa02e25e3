#!/bin/sh
# One device lease, as one prepared command (README.md). What DIR holds
# picks the parts, each with its own time limit, so a part that hangs
# cannot cost the rest:
#   plan.json                       the GPU profile (SECTIONS: profile.py's --sections)
#   vllm-trees.tgz                  vLLM's host work on this machine's CPU (tools/vllm-hosttime),
#                                   then the profile run's sampler on its GPU, its memory peak and
#                                   the time it takes per step (tools/vllm-oracle): extracted source
#                                   trees and engines.txt ("tree commit engine..." lines); TREE_PARTS
#                                   picks among hosttime, sampler-peak and sampler-time (all three)
#   servebench.gz, e2ebench.test.gz the emulator's 1,000-stream benchmark on its cores
# Usage, from the repository root: tools/gpu-profile/lease.sh DIR
set -u
dir=${1:?usage: lease.sh DIR}
out=${OUT:?set OUT to the folder that results go to}
root=$(pwd)
want() { case $parts in *" $1 "*) return 0 ;; esac; return 1; }
nproc
{ lscpu; grep -m1 "model name" /proc/cpuinfo; python3 --version; } >"$out/cpu.txt" 2>&1
if [ -f "$dir/plan.json" ]; then
	mkdir -p "$out/profile"
	PYTHONUNBUFFERED=1 timeout "${PROFILE_S:-280}" python3 tools/gpu-profile/profile.py \
		--shapes "$dir/plan.json" --out "$out/profile" --budget-s "$((${PROFILE_S:-280} - 40))" \
		--sections "${SECTIONS:-gemm,prefill,decode,layer,gemm-fp8,layer-sharded}" >"$out/profile.log" 2>&1
	echo "profile: exit $?"
fi
if [ -f "$dir/vllm-trees.tgz" ]; then
	mkdir -p /tmp/trees
	tar xzf "$dir/vllm-trees.tgz" -C /tmp/trees
	parts=" ${TREE_PARTS:-hosttime sampler-peak sampler-time} "
	# engines.txt in the archive: one "tree-directory vllm-commit engine..." per line.
	# each_engine CMD runs CMD tree commit release engine for each release and engine.
	each_engine() {
		while read -r tree commit engines; do
			for engine in $engines; do
				"$@" "$tree" "$commit" "${tree#vllm-}" "$engine"
			done
		done </tmp/trees/engines.txt
	}
	in_background() { "$@" & }
	hosttime() {
		timeout "${HOST_S:-300}" python3 -W ignore tools/vllm-hosttime/hosttime.py \
			--vllm-src "/tmp/trees/$1" --release "$3" --commit "$2" --engine "$4" \
			${HOST_SIZES:+--sizes "$HOST_SIZES"} --passes "${HOST_PASSES:-3}" \
			--out "$out/hosttime/host-$3-$4.json" >"$out/hosttime/$3-$4.log" 2>&1
		echo "hosttime $3 $4: exit $?"
	}
	sampler_peak() {
		for rows in ${SAMPLER_ROWS:-64 256 1024}; do
			for vocab in ${SAMPLER_VOCABS:-32000 128256 151936}; do
				timeout 120 python3 -W ignore tools/vllm-oracle/sampler_peak.py --device cuda \
					--vllm-src "/tmp/trees/$1" --release "$3" --commit "$2" \
					--engine "$4" --rows "$rows" --vocab "$vocab" \
					--out "$out/sampler/sampler-$3-$4-$rows-$vocab.json" \
					>>"$out/sampler/$3-$4.log" 2>&1
			done
		done
		echo "sampler $3 $4: exit $?"
	}
	sampler_time() {
		timeout "${SAMPLER_TIME_S:-150}" python3 -W ignore tools/vllm-oracle/sampler_time.py \
			--vllm-src "/tmp/trees/$1" --release "$3" --commit "$2" --engine "$4" \
			--out "$out/sampler-time/time-$3-$4.json" >"$out/sampler-time/$3-$4.log" 2>&1
		echo "sampler-time $3 $4: exit $?"
	}
	# vLLM's host work: each release and engine on its own core, all at once.
	if want hosttime; then
		mkdir -p "$out/hosttime"
		each_engine in_background hosttime
		wait
	fi
	# The profile run's sampler on this GPU (tools/vllm-oracle/sampler_peak.py
	# --device cuda): the caching allocator's peaks by rows and vocabulary.
	if want sampler-peak; then
		mkdir -p "$out/sampler"
		each_engine in_background sampler_peak
		wait
	fi
	# The sampler's time per step on this GPU (tools/vllm-oracle/sampler_time.py),
	# one release and engine after another: they share the GPU.
	if want sampler-time; then
		mkdir -p "$out/sampler-time"
		each_engine sampler_time
	fi
fi
if [ -f "$dir/servebench.gz" ] && [ -f "$dir/e2ebench.test.gz" ]; then
	gunzip -c "$dir/servebench.gz" >/tmp/servebench && chmod +x /tmp/servebench
	gunzip -c "$dir/e2ebench.test.gz" >/tmp/e2ebench.test && chmod +x /tmp/e2ebench.test
	cd /tmp || exit 1
	SERVEBENCH_E2E_BIN=/tmp/servebench timeout 100 /tmp/e2ebench.test -test.run '^$' \
		-test.bench EmulatorStreams -test.benchtime 1x -test.count 3 >"$out/e2e.log" 2>&1
	echo "emulator: exit $?"
	timeout 30 /tmp/e2ebench.test -test.run '^$' -test.bench LoopbackFloor -test.benchtime 1x >>"$out/e2e.log" 2>&1
	echo "floor: exit $?"
	cd "$root" || exit 1
fi
# The lease returns a few files only: everything also goes back as one archive.
tar czf /tmp/lease-out.tgz -C "$out" . && mv /tmp/lease-out.tgz "$out/all.tgz"
