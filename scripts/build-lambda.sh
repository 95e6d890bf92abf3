#!/usr/bin/env bash
# Builds the Lambda binaries the CDK stack deploys:
#   build/lambda/gateway/bootstrap and build/lambda/rollup/bootstrap
# (linux/arm64, static, for the provided.al2023 runtime).
#
# Usage: scripts/build-lambda.sh [OUT_DIR]   (default: build/lambda)
#        LAMBDA_GOARCH=amd64 scripts/build-lambda.sh DIR   (another architecture: the
#        infra deploy test runs the binaries on the host, see
#        infra/gwstack/moto_test.go; Lambda itself runs arm64)
# Run from anywhere; paths are relative to the repository root.
# cdk.json runs this script before every synth ("build").
. "$(dirname "$0")/lib/help.sh"
set -euo pipefail

cd "$(dirname "$0")/.."
out="${1:-build/lambda}"

arch="${LAMBDA_GOARCH:-arm64}"

for name in gateway rollup; do
	mkdir -p "$out/$name"
	echo "building $out/$name/bootstrap (linux/$arch)" >&2
	GOOS=linux GOARCH="$arch" CGO_ENABLED=0 \
		go build -tags lambda.norpc -trimpath -ldflags='-s -w' \
		-o "$out/$name/bootstrap" "./functions/$name"
done
