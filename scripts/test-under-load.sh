#!/usr/bin/env bash
# Runs `npm test` while a CPU-bound job takes every core (stress-ng --cpu N, N the
# number of cores): the tests must hold on a busy machine (a developer's laptop, a
# shared CI runner), not only on an idle one. stress-ng is stopped when the run ends,
# whatever happens (the tests fail, the script is interrupted). Exits with npm test's
# status.
#
#   scripts/test-under-load.sh [--cpu N] [test files...]
#     --cpu N      CPU workers for stress-ng (default: the number of cores, nproc)
#     test files   run these with tap instead of the whole `npm test`
#   e.g. scripts/test-under-load.sh                     the whole suite, as npm test runs it
#        scripts/test-under-load.sh test/front/slow-clients.test.ts
set -uo pipefail
cd "$(dirname "$0")/.."

cpus=$(nproc)
if [ "${1:-}" = "--cpu" ]; then
  cpus=${2:?--cpu needs a number}
  shift 2
fi

bash scripts/test-deps.sh test || exit 1
command -v stress-ng >/dev/null || { echo "stress-ng is missing: apt-get install -y stress-ng" >&2; exit 1; }

# Longer than any test run: the trap below stops it when the tests end.
stress-ng --cpu "$cpus" --timeout 3h --quiet &
stress=$!
stop_stress() {
  kill "$stress" 2>/dev/null
  wait "$stress" 2>/dev/null
}
trap stop_stress EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

started=$(date +%s)
if [ $# -eq 0 ]; then
  what="npm test"
  echo "stress-ng --cpu $cpus running (pid $stress); $what"
  npm test
else
  what="tap $*"
  echo "stress-ng --cpu $cpus running (pid $stress); $what"
  npm run --silent build && npx tap "$@"
fi
status=$?
echo "$what under stress-ng --cpu $cpus: exit $status after $(( $(date +%s) - started )) s"
exit "$status"
