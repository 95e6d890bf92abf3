#!/usr/bin/env bash
# Runs every test of the gateway on a fresh machine: installs what the tests
# need (Go modules; dynalite from npm for the DynamoDB tests), then go vet,
# the race-enabled test suite (the soak and 1,000-stream tests in their
# short mode; every fuzz target's seed corpus runs as a plain test), a smoke
# run of the benchmark harness, the real Claude Code, Codex CLI, AI SDK and
# Agents SDK against the gateway (scripts/agents), and the CDK tests in the
# background: synthesis, cdk-nag, cfn-lint on every synthesized template
# and a CloudFormation deploy of the stack on a local moto server (those two
# skip, saying why, without the python3 packages: pip install cfn-lint
# 'moto[server]').
#
# It prints a line per phase with the time since the start, and while a
# phase prints nothing for 20 s, a line saying what it is doing.
#
# Not run here: fuzzing beyond the seed corpora (scripts/fuzz.sh), the long
# soak (SOAK_DURATION=10m go test -run TestSoak ./pkg/resilience) and the
# full benchmark (scripts/bench.sh). See docs/testing.md.
#
# Usage: ./scripts/test.sh          everything
#        SHORT=1 ./scripts/test.sh  only vet and the Go test suite
#        ./scripts/test.sh -h       this text
. "$(dirname "$0")/lib/help.sh"
set -euo pipefail
cd "$(dirname "$0")/.."

export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1

# phase and progress: the progress lines (scripts/lib/progress.sh).
. scripts/lib/progress.sh

# This run's own scratch directory (logs): concurrent runs never share a path.
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/llmgw-test.XXXXXX")
CDK_PID=
cleanup() {
  # Only the background job this script started, by its pid.
  if [ -n "$CDK_PID" ] && kill -0 "$CDK_PID" 2>/dev/null; then
    kill -TERM -- "-$CDK_PID" 2>/dev/null || true
  fi
  rm -rf "$LOGDIR"
}
trap cleanup EXIT

phase "installing test dependencies (go mod download; npm ci for dynalite)"
progress "downloading Go modules" "$LOGDIR/download.log" go mod download -x ||
	{ tail -20 "$LOGDIR/download.log"; exit 1; }
if [ ! -x node_modules/.bin/dynalite ] && [ ! -f node_modules/dynalite/cli.js ]; then
  progress "npm ci (dynalite)" - npm ci --no-audit --no-fund --loglevel=error
fi

pkgs=$(go list ./... | grep -v '/infra')

if [ "${SHORT:-}" = "" ]; then
  phase "CDK tests started in the background (go vet + go test ./infra/...; log: $LOGDIR/cdk.log)"
  # Its own process group (setsid), so that an early exit stops it and its
  # go children, and nothing else.
  setsid bash -c 't=$SECONDS; go vet ./infra/... && go test -count=1 -timeout 30m ./infra/...; rc=$?
    echo "(CDK tests took $((SECONDS - t))s, exit $rc)"; exit $rc' >"$LOGDIR/cdk.log" 2>&1 &
  CDK_PID=$!
  # The lint and emulator-deploy tests skip without their tools: say so here
  # (go test prints nothing for a skipped test).
  command -v cfn-lint >/dev/null ||
    phase "NOTE: cfn-lint missing (pip install cfn-lint): infra TestTemplatesPassCfnLint will SKIP"
  python3 -c 'import moto.server' 2>/dev/null ||
    phase "NOTE: moto missing (pip install 'moto[server]'): infra TestStackDeploysOnMotoAndServes will SKIP"
fi

# vet with -race: it compiles the dependencies exactly as the race-enabled
# test run below does, which then reuses them from the build cache (a plain
# go vet would compile every package a second time without -race).
phase "go vet -race (gateway packages)"
# -x only feeds the progress lines (the package being compiled); on a
# failure vet runs again without it (everything cached) to show the report.
# shellcheck disable=SC2086
progress "go vet -race, compiling every package with -race on the first run" "$LOGDIR/vet.log" go vet -race -x $pkgs ||
	go vet -race $pkgs

phase "go test -race -short (gateway packages; fuzz seed corpora run as tests)"
# shellcheck disable=SC2086
progress "go test -race" - go test -race -short -count=1 -timeout 20m $pkgs

phase "a stream's stack and per-frame allocations without -race (the race detector changes both)"
progress "stream stack and allocation checks" - go test -count=1 -run '^(TestStreamStackFits16KiB|TestPassthroughRelaysFramesWithoutAllocating)$' ./pkg/server/

if [ "${SHORT:-}" = "" ]; then
  phase "benchmark harness (smoke mode: keeps it from rotting; figures are not published)"
  # -race (through GOFLAGS, for every go build and go test of the harness):
  # the smoke run's figures are not published, and its binaries then link
  # the race suite's compiled packages instead of compiling all of them again.
  progress "benchmark smoke run" "$LOGDIR/bench-smoke.log" env GOFLAGS="${GOFLAGS:+$GOFLAGS }-race" SMOKE=1 ./scripts/bench.sh ||
    { tail -50 "$LOGDIR/bench-smoke.log"; exit 1; }
  tail -3 "$LOGDIR/bench-smoke.log"

  phase "real clients against the gateway (Claude Code, Codex CLI, AI SDK, Agents SDK from npm; each skipped, saying why, when npm cannot install it)"
  # -race: the test binary reuses the race suite's compiled packages.
  progress "real clients" "$LOGDIR/agents.log" ./scripts/agents/check.sh -race || { tail -80 "$LOGDIR/agents.log"; exit 1; }
  grep -E '^(--- |ok)|skipping:|using codex|using claude' "$LOGDIR/agents.log" || true

  phase "waiting for the CDK tests (stack synthesis, cdk-nag, cfn-lint, deploy on moto)"
  cdk_rc=0
  progress "CDK tests" "$LOGDIR/cdk.log" tail --pid="$CDK_PID" -f /dev/null
  wait "$CDK_PID" || cdk_rc=$?
  CDK_PID=
  cat "$LOGDIR/cdk.log"
  if [ "$cdk_rc" -ne 0 ]; then
    phase "CDK tests FAILED (exit $cdk_rc)"
    exit "$cdk_rc"
  fi
fi

phase "all tests passed"
