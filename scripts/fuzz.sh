#!/usr/bin/env bash
# Runs every Go fuzz target of the repository (every `func FuzzXxx(f *testing.F)`
# in a _test.go file under pkg/), one after the other, each for FUZZTIME.
#
# Usage: ./scripts/fuzz.sh [regexp]      (only targets whose name matches)
#   FUZZTIME=10s            how long each target is fuzzed (go test -fuzztime;
#                           "500x" means 500 executions)
#   FUZZ_MINIMIZE_TIME=2s   how long a new interesting input is minimized
#                           (go's default, 60s, stalls short runs)
#   FUZZ_PARALLEL=          fuzzing workers (default: GOMAXPROCS)
#
# The seed corpora (f.Add and testdata/fuzz/<Target>/) run with every plain
# `go test`; this script explores beyond them. A failure leaves the failing
# input in <package>/testdata/fuzz/<Target>/ (commit it with the fix, as a
# regression seed) and the script exits non-zero after running the rest.
. "$(dirname "$0")/lib/help.sh"
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime="${FUZZTIME:-10s}"
minimize="${FUZZ_MINIMIZE_TIME:-2s}"
filter="${1:-.}"
parallel=()
if [ -n "${FUZZ_PARALLEL:-}" ]; then
  parallel=(-parallel "$FUZZ_PARALLEL")
fi

# "dir target" pairs, sorted.
targets=$(grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' pkg \
  | sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*#\1 \2#' | sort -u)
if [ -z "$targets" ]; then
  echo "no fuzz targets found" >&2
  exit 1
fi

failed=()
count=0
while read -r dir name; do
  [[ "$name" =~ $filter ]] || continue
  count=$((count + 1))
  echo "== $name ($dir) for $fuzztime"
  set +e
  go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" \
    "${parallel[@]}" "./$dir" 2>&1 | grep -v '^fuzz: elapsed: .*execs: .* (0/sec)'
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" -ne 0 ]; then
    failed+=("$dir $name")
  fi
done <<< "$targets"

if [ "$count" -eq 0 ]; then
  echo "no fuzz target matches $filter" >&2
  exit 1
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "== FAILED (failing inputs are in <package>/testdata/fuzz/<target>/):"
  printf '   %s\n' "${failed[@]}"
  exit 1
fi
echo "== all $count fuzz targets passed ($fuzztime each)"
