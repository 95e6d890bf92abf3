#!/usr/bin/env bash
# Runs real clients as users run them against the gateway and fake upstreams
# on loopback (no network beyond loopback once installed, no API key):
#   - Codex CLI (npm @openai/codex, the version pinned in codex_test.go, or
#     CODEX_VERSION; CODEX_BIN points at an existing binary): a plain answer
#     passed through to a Responses upstream, a shell-tool round trip
#     translated to a chat-only upstream, a failover before the first token,
#     and a cut stream that must be an error;
#   - the AI SDK's default OpenAI provider and the OpenAI Agents SDK (npm,
#     versions in sdks_test.go): answers generated and streamed, a cut stream;
#   - Claude Code (npm @anthropic-ai/claude-code, the version pinned in
#     claude_test.go; also ./scripts/agents/claude.sh alone): a plain answer, a
#     tool round trip, a failover and a cut stream through /v1/messages; and in
#     Bedrock mode (CLAUDE_CODE_USE_BEDROCK=1) through a dead first target;
#   - the AWS SDK for JavaScript v3's Bedrock Runtime client (npm, version in
#     bedrock_test.go): converse, converseStream, a cut stream, an unknown model;
#   - the README's Claude Code block and AI SDK snippet, as written, on the
#     demo config.
# Each client is installed into .llmgw/agents on first run; when npm cannot
# install it its test is skipped, saying why.
#
# Usage: ./scripts/agents/check.sh [go test flags]
. "$(dirname "$0")/../lib/help.sh"
set -euo pipefail
cd "$(dirname "$0")/../.."
LLMGW_AGENT_TESTS=1 exec go test -count=1 -v -run 'TestCodexCLI|TestNodeSDKs|TestClaudeCode|TestJSBedrockRuntime|TestDocSnippets' ./scripts/agents/ "$@"
