#!/usr/bin/env bash
# Runs the real Claude Code CLI (npm @anthropic-ai/claude-code, the version
# pinned in claude_test.go unless CLAUDE_CODE_VERSION is set) against the
# gateway and fake Anthropic upstreams on loopback: a plain answer, a tool
# round trip, a failover before the first token, and a stream cut after it;
# and against fake Bedrock runtimes (claude_bedrock_test.go): its own
# Bedrock-mode body compared with the gateway's for the same turn, and a
# route over Anthropic and Bedrock failing over both ways.
# Claude Code is installed with npm into a cache directory
# (LLMGW_AGENT_CACHE, default ~/.cache/llmgw-agents) on first use; set
# CLAUDE_BIN to use an installed binary instead. The check skips, with the
# reason, when npm cannot install it. Nothing leaves loopback: telemetry,
# auto-update, error reporting and non-essential traffic are turned off and
# HOME is a throwaway directory.
#
# Usage: ./scripts/agents/claude.sh
. "$(dirname "$0")/../lib/help.sh"
set -euo pipefail
cd "$(dirname "$0")/../.."
LLMGW_AGENT_TESTS=1 exec go test -count=1 -v -timeout 15m -run 'TestClaudeCode' ./scripts/agents/
