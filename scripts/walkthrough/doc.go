// Package walkthrough is the test of the README's local walkthrough: it
// runs every shell block of README.md marked `<!-- walkthrough -->`, in
// order, with bash, the way a new user pastes them on a fresh machine, and
// checks what each command prints against the `#>` lines below it.
//
// Markers (an HTML comment on the line before the ```sh fence):
//
//	<!-- walkthrough -->                  run the block
//	<!-- walkthrough: gateway stopped --> stop the gateway first (the
//	                                      README says to press Ctrl-C)
//
// In a block, a command is a line and its backslash continuations; `#`
// lines are comments, and the `#>` lines after a command are what it
// prints, in order (other lines may come between them), each matching a
// whole line, with `...` standing for any text. A command that starts the
// gateway (`go run ./functions/gateway ...`) runs in the background, as in
// a second terminal, after the previous gateway is stopped; the next
// command runs once it answers /healthz. `./scripts/test.sh` is not run
// (it runs this test).
//
// The walkthrough runs in a temporary directory that looks like the
// repository root (pkg, events, scripts and functions are links to the
// repository's), so what it writes (gw.yaml, .llmgw/) stays out of the
// work tree; the gateway listens on a free loopback port instead of 8080
// (every 127.0.0.1:8080 in the commands is rewritten); `go run ./X` runs a
// binary built once from ./X, and any other go command runs in the
// repository. Nothing leaves loopback.
package walkthrough
