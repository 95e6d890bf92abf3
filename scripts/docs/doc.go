// Package docs is the test of the documentation: README.md and every
// docs/*.md. Its tests read each fenced block and check it:
//
//   - a yaml block loads with the gateway's config loader (config.Parse),
//     merged, as an SSM parameter would be, over a base that declares the
//     providers the documents name (openai, anthropic, bedrock, ...); a
//     block marked `<!-- fragment -->` on the line before its fence (a
//     part of a config with placeholders) must only be valid YAML;
//   - a sh block names scripts and directories that exist, and every flag
//     it gives a `go run ./X` command is one X's -h lists;
//   - a python block parses (python3's ast), a js block passes
//     `node --check` (each skipped, saying so, without the tool);
//   - every relative link resolves to a file, and its #anchor to a heading.
//
// It also checks that every script answers -h with its usage and exits 0
// without running anything, and that the test command's progress lines
// come while a phase is silent. The README's walkthrough itself runs in
// scripts/walkthrough; its Claude Code block and AI SDK snippet run in
// scripts/agents, which installs those clients.
package docs
