#!/usr/bin/env bash
# Runs every test of the gateway on a fresh machine: installs what the tests
# need (Go modules, dynalite from npm for the DynamoDB tests, the jsii runtime
# comes with node for the CDK tests), then vet, the race-enabled test suite
# (soak and 1,000-stream tests in their short mode; every fuzz target's seed
# corpus, f.Add and testdata/fuzz/, runs as a plain test), a smoke run of the
# benchmark harness, the real Codex CLI, AI SDK and Agents SDK against the
# gateway (scripts/agents), and the CDK tests: synthesis, cdk-nag, cfn-lint on
# every synthesized template, and a CloudFormation deploy of the stack on a
# moto server with the real bootstraps run against it (infra/gwstack; the
# last two skip, saying why, when the cfn-lint or moto python3 packages are
# missing: .ci/run installs them).
#
# The CDK tests (vet and test of ./infra/..., not race-instrumented) run in
# the background while the race suite runs in the foreground: their output
# is kept in a log and printed when they finish, and either failing fails
# the script.
#
# Not run here (separate documented commands): fuzzing beyond the seed
# corpora (scripts/fuzz.sh: fuzz-instrumented builds cost minutes), the long
# soak (SOAK_DURATION=10m go test -run TestSoak ./pkg/resilience) and the
# full benchmark (scripts/bench.sh).
#
# Usage: ./scripts/test.sh          (everything)
#        SHORT=1 ./scripts/test.sh  (only vet and the Go test suite)
set -euo pipefail
cd "$(dirname "$0")/.."

export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1

T0=$SECONDS
# phase TEXT: prints one line per phase with the time since the start.
phase() {
  local s=$((SECONDS - T0))
  printf '== [%2dm%02ds] %s\n' $((s / 60)) $((s % 60)) "$*"
}

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
go mod download
if [ ! -x node_modules/.bin/dynalite ] && [ ! -f node_modules/dynalite/cli.js ]; then
  npm ci --no-audit --no-fund --loglevel=error
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
# shellcheck disable=SC2086
go vet -race $pkgs

phase "go test -race -short (gateway packages; fuzz seed corpora run as tests)"
# shellcheck disable=SC2086
go test -race -short -count=1 -timeout 20m $pkgs

if [ "${SHORT:-}" = "" ]; then
  phase "benchmark harness (smoke mode: keeps it from rotting; figures are not published)"
  # -race (through GOFLAGS, for every go build and go test of the harness):
  # the smoke run's figures are not published, and its binaries then link
  # the race suite's compiled packages instead of compiling all of them again.
  GOFLAGS="${GOFLAGS:+$GOFLAGS }-race" SMOKE=1 ./scripts/bench.sh >"$LOGDIR/bench-smoke.log" 2>&1 || { tail -50 "$LOGDIR/bench-smoke.log"; exit 1; }
  tail -3 "$LOGDIR/bench-smoke.log"

  phase "real clients against the gateway (Claude Code, Codex CLI, AI SDK, Agents SDK from npm; each skipped, saying why, when npm cannot install it)"
  # -race: the test binary reuses the race suite's compiled packages.
  ./scripts/agents/check.sh -race >"$LOGDIR/agents.log" 2>&1 || { tail -80 "$LOGDIR/agents.log"; exit 1; }
  grep -E '^(--- |ok)|skipping:|using codex|using claude' "$LOGDIR/agents.log" || true

  phase "waiting for the CDK tests (stack synthesis, cdk-nag, cfn-lint, deploy on moto)"
  cdk_rc=0
  wait "$CDK_PID" || cdk_rc=$?
  CDK_PID=
  cat "$LOGDIR/cdk.log"
  if [ "$cdk_rc" -ne 0 ]; then
    phase "CDK tests FAILED (exit $cdk_rc)"
    exit "$cdk_rc"
  fi
fi

phase "all tests passed"
