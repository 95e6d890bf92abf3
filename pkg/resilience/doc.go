// Package resilience holds no gateway code: it is the gateway's resilience
// suite, a test-only package that drives the real handler (pkg/server)
// with real adapters (openai, anthropic, bedrock) against fake upstreams
// that speak each provider's wire format byte for byte, and injects faults
// between them with Toxiproxy run in-process.
//
//   - toxic_test.go: network faults on the upstream path, per provider kind
//     (cuts, resets, refused connections, stalls, idle gaps, slow trickles)
//     and latency on the store path (pkg/breaker and pkg/keyledger over dynalite).
//   - disconnect_test.go: clients that leave at random points during many
//     concurrent streams; cancellation, records, goroutines and heap.
//   - hostile_test.go: malformed, oversized, mistyped and redirecting input.
//   - secrets_test.go: provider and team keys echoed back by hostile
//     upstreams never reach responses, logs or stored items.
//   - soak_test.go: a bounded soak (SOAK_DURATION) mixing all of it.
//
// Run: go test -race -short ./pkg/resilience/ (about a minute), or without
// -short for the full counts. Fuzz targets live next to the code they fuzz
// (fuzz_test.go files); scripts/fuzz.sh runs them all.
package resilience
