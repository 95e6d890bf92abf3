#!/usr/bin/env bash
# Runs the real Codex CLI (npm @openai/codex, the version pinned in
# scripts/agents/codex_test.go, or CODEX_VERSION) against the gateway and
# fake upstreams on loopback: a plain answer passed through to a Responses
# upstream, a shell-tool round trip translated to a chat-only upstream, a
# failover before the first token, and a cut stream that must be an error.
# No network beyond loopback once Codex is installed, no API key.
#
# Codex is installed into .llmgw/agents/codex-<version> on first run; when
# npm cannot install it the test is skipped, saying why. CODEX_BIN points
# at an existing codex binary instead.
#
# Usage: ./scripts/agents/codex.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
LLMGW_AGENT_TESTS=1 exec go test -count=1 -v -run 'TestCodexCLI' ./scripts/agents/ "$@"
