#!/usr/bin/env bash
# Runs every test of the gateway on a fresh machine: installs what the tests
# need (Go modules, dynalite from npm for the DynamoDB tests, the jsii runtime
# comes with node for the CDK tests), then vet, the race-enabled test suite
# (soak and 1,000-stream tests in their short mode), a short fuzz run of every
# fuzz target, a smoke run of the benchmark harness, the real Codex CLI, AI
# SDK and Agents SDK against the gateway (scripts/agents), and the CDK
# synthesis and cdk-nag tests.
#
# Usage: ./scripts/test.sh          (everything)
#        SHORT=1 ./scripts/test.sh  (only vet and the Go test suite)
set -euo pipefail
cd "$(dirname "$0")/.."

export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1

# This run's own scratch directory: concurrent runs never share a path.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/llmgw-test.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

echo "== installing test dependencies"
go mod download
if [ ! -x node_modules/.bin/dynalite ] && [ ! -f node_modules/dynalite/cli.js ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

pkgs=$(go list ./... | grep -v '/infra')

echo "== go vet"
go vet ./...

echo "== go test -race -short (gateway packages)"
go test -race -short -count=1 -timeout 20m $pkgs

if [ "${SHORT:-}" = "" ]; then
  echo "== fuzz (short run of every target)"
  FUZZTIME="${FUZZTIME:-3s}" ./scripts/fuzz.sh

  echo "== benchmark harness (smoke mode: keeps it from rotting; figures are not published)"
  SMOKE=1 ./scripts/bench.sh > "$scratch/bench-smoke.log" 2>&1 || { tail -50 "$scratch/bench-smoke.log"; exit 1; }
  tail -3 "$scratch/bench-smoke.log"

  echo "== real clients against the gateway (Codex CLI, AI SDK, Agents SDK from npm; each skipped, saying why, when npm cannot install it)"
  ./scripts/agents/check.sh > "$scratch/agents.log" 2>&1 || { tail -80 "$scratch/agents.log"; exit 1; }
  grep -E '^(--- |ok)|skipping:|using codex' "$scratch/agents.log"

  echo "== go test (CDK stack synthesis, cdk-nag)"
  go test -count=1 -timeout 30m ./infra/...
fi
