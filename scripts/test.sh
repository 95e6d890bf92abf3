#!/usr/bin/env bash
# Runs every test of the gateway on a fresh machine: installs what the tests
# need (Go modules, dynalite from npm for the DynamoDB tests, the jsii runtime
# comes with node for the CDK tests), then vet, the race-enabled test suite
# and the CDK synthesis tests.
#
# Usage: ./scripts/test.sh          (everything)
#        SHORT=1 ./scripts/test.sh  (skip the CDK synthesis tests, faster)
set -euo pipefail
cd "$(dirname "$0")/.."

export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1

echo "== installing test dependencies"
go mod download
if [ ! -x node_modules/.bin/dynalite ] && [ ! -f node_modules/dynalite/cli.js ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

pkgs=$(go list ./... | grep -v '/infra')

echo "== go vet"
go vet ./...

echo "== go test -race (gateway packages)"
go test -race -count=1 -timeout 20m $pkgs

if [ "${SHORT:-}" = "" ]; then
  echo "== go test (CDK stack synthesis, cdk-nag)"
  go test -count=1 -timeout 30m ./infra/...
fi
