#!/bin/sh
# One device lease, as one prepared command (README.md): the GPU profile,
# then the emulator's 1,000-stream benchmark on the lease's cores. Every
# part has its own time limit, so a part that hangs cannot cost the rest.
# Usage, from the repository root: tools/gpu-profile/lease.sh DIR
# where DIR holds plan.json, servebench.gz and e2ebench.test.gz.
set -u
dir=${1:?usage: lease.sh DIR}
out=${OUT:?set OUT to the folder that results go to}
mkdir -p "$out/profile"
nproc
PYTHONUNBUFFERED=1 timeout 280 python3 tools/gpu-profile/profile.py \
	--shapes "$dir/plan.json" --out "$out/profile" --budget-s 240 >"$out/profile.log" 2>&1
echo "profile: exit $?"
gunzip -c "$dir/servebench.gz" >/tmp/servebench && chmod +x /tmp/servebench
gunzip -c "$dir/e2ebench.test.gz" >/tmp/e2ebench.test && chmod +x /tmp/e2ebench.test
cd /tmp || exit 1
SERVEBENCH_E2E_BIN=/tmp/servebench timeout 100 /tmp/e2ebench.test -test.run '^$' \
	-test.bench EmulatorStreams -test.benchtime 1x -test.count 3 >"$out/e2e.log" 2>&1
echo "emulator: exit $?"
timeout 30 /tmp/e2ebench.test -test.run '^$' -test.bench LoopbackFloor -test.benchtime 1x >>"$out/e2e.log" 2>&1
echo "floor: exit $?"
