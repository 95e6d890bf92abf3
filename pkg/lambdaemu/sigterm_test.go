package lambdaemu_test

import (
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/deployment"
)

// TestSIGTERMShutsTheGatewayDownThroughTheRealBinary: the runtime's
// SIGTERM (sent before Lambda shuts an instance down) runs the gateway's
// Shutdown in the real bootstrap: every component flushed and closed, in
// order, logged once.
func TestSIGTERMShutsTheGatewayDownThroughTheRealBinary(t *testing.T) {
	cfg := writeConfig(t, `
providers:
  steady: {kind: fake, fake: {reply: "Hello from a fake model."}}
routes:
  demo: {targets: [{provider: steady, model: fake-1}]}
`)
	f := start(t, deployment.EnvConfigFile+"="+cfg)
	resp := invoke(t, f, event(t, "function-url-chat.json"), time.Minute)
	io.Copy(io.Discard, resp.Body)
	if resp.Status != 200 {
		t.Fatalf("status %d", resp.Status)
	}
	if strings.Contains(f.stderr.String(), "gateway shut down") {
		t.Fatal("shut down before SIGTERM")
	}
	if err := f.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	const line = `"msg":"gateway shut down","components":["breaker","retry budget","key ledger","team limiter"],"failed_steps":0`
	waitFor(t, func() bool { return strings.Contains(f.stderr.String(), line) }, "no shutdown log line after SIGTERM:\n"+f.stderr.String())
}
