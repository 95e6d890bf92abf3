#!/usr/bin/env bash
# Invokes the real Lambda bootstrap binary with a sample Function URL event,
# through the emulated Runtime API (pkg/lambdaemu), and prints the streamed
# response as it arrives. No AWS needed.
#
# Usage: scripts/invoke-local.sh [events/function-url-chat-stream.json] [config.yaml]
# Without a config the built-in demo config (fake providers) is used.
. "$(dirname "$0")/lib/help.sh"
set -euo pipefail
cd "$(dirname "$0")/.."
event=${1:-events/function-url-chat-stream.json}
config=${2:-}
go run ./scripts/lambdainvoke -event "$event" -config "$config"
