package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/server"
)

// browserPage calls two gateways from a page on another origin (another
// loopback port) with fetch(), as a web app would, and posts what it saw
// back to its own server.
const browserPage = `<!doctype html><script>
(async () => {
  const out = {};
  const json = {"Content-Type": "application/json"};
  const chat = '{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}';
  try {
    const r = await fetch(ALLOWED + "/v1/chat/completions", {method: "POST", body: chat,
      headers: {...json, "Authorization": "Bearer team-key", "X-Stainless-OS": "Linux", "x-gateway-tag": "web"}});
    out.status = r.status;
    out.requestId = r.headers.get("x-request-id");
    out.provider = r.headers.get("x-gateway-provider");
    out.body = await r.text();
  } catch (e) { out.streamError = String(e); }
  try {
    const r = await fetch(ALLOWED + "/v1/models", {headers: {"Authorization": "Bearer team-key"}});
    out.models = r.status;
  } catch (e) { out.models = String(e); }
  try {
    const r = await fetch(ALLOWED + "/v1/chat/completions", {method: "POST", body: chat, headers: {"Content-Type": "text/plain"}});
    out.textPlain = r.status;
  } catch (e) { out.textPlain = String(e); }
  try {
    await fetch(REFUSED + "/v1/chat/completions", {method: "POST", body: chat, headers: {...json, "Authorization": "Bearer team-key"}});
    out.refused = "answered";
  } catch (e) { out.refused = e.name; }
  try {
    await fetch(REFUSED + "/v1/chat/completions", {method: "POST", body: chat, mode: "no-cors"});
    out.simple = "sent";
  } catch (e) { out.simple = String(e); }
  await fetch("/result", {method: "POST", body: JSON.stringify(out)});
})();
</script>`

// chromium finds a headless Chromium, or skips.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium-headless-shell", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on PATH (apt-get install --no-install-recommends chromium-headless-shell); the net/http CORS tests cover the protocol")
	return ""
}

// TestBrowserCallsTheGatewayCrossOrigin, with headless Chromium: a page on
// an allowed origin streams a chat completion with a team key and reads
// the gateway's exposed headers and its errors (a keyless POST: 401). A
// gateway that does not allow the page's origin, serving anyone (local
// mode without team keys), is out of the page's reach: its JSON POST is
// stopped by the refused preflight, and the one request a page can send
// without a preflight (no-cors, text/plain) gets a 415. Only the allowed
// stream reaches a provider.
func TestBrowserCallsTheGatewayCrossOrigin(t *testing.T) {
	browser := chromium(t)
	up := newUpstream(t, okHandler)
	results := make(chan string, 1)
	// The page's text needs the gateways' addresses, which need the page's
	// origin: it is stored once they are known (atomically: the race
	// detector cannot see that the browser asks only after).
	var pageScript atomic.Value
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/result" {
			b, _ := io.ReadAll(r.Body)
			select {
			case results <- string(b):
			default:
			}
			return
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, pageScript.Load().(string))
	}))
	defer page.Close()
	auth := func(o *server.Options) {
		o.Authenticate = func(r *http.Request) (*exchange.Caller, error) {
			if r.Header.Get("Authorization") != "Bearer team-key" {
				return nil, gwerr.New(gwerr.Authentication, "invalid API key")
			}
			return &exchange.Caller{Team: "web", KeyID: "k1"}, nil
		}
	}
	allowed := newGateway(t, "server: {cors: {allow_origins: ["+page.URL+"]}}\n"+oneRoute("", up.URL), auth)
	// The refused gateway is local mode without team keys: it serves any
	// caller, the case a web page could abuse.
	refused := newGateway(t, "server: {cors: {allow_origins: [https://elsewhere.example.com]}}\n"+oneRoute("", up.URL))
	pageScript.Store(strings.NewReplacer("ALLOWED", `"`+allowed.URL+`"`, "REFUSED", `"`+refused.URL+`"`).Replace(browserPage))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Chromium's helper processes may still write to its profile after the
	// browser is killed: they run in its process group, which is killed
	// whole, and the profile is removed best-effort (not by t.TempDir,
	// whose cleanup fails the test on a late write).
	profile, err := os.MkdirTemp("", "chromium-profile-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(profile)
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir="+profile, page.URL+"/")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	var raw string
	select {
	case raw = <-results:
	case <-ctx.Done():
		t.Fatal("the page never reported")
	}
	var got struct {
		Status              int
		RequestID, Provider string
		Body, StreamError   string
		Models, TextPlain   any
		Refused, Simple     string
	}
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if got.Status != 200 || got.RequestID == "" || got.Provider != "p0" || !strings.Contains(got.Body, "Hello") ||
		!strings.Contains(got.Body, "data: [DONE]") || got.StreamError != "" {
		t.Errorf("allowed stream: %s", raw)
	}
	if got.Models != 200.0 || got.TextPlain != 401.0 {
		t.Errorf("models %v, text/plain %v: %s", got.Models, got.TextPlain, raw)
	}
	if got.Refused != "TypeError" || got.Simple != "sent" {
		t.Errorf("refused origin: %s", raw)
	}
	if recs := refused.waitRecs(t, 1); len(recs) != 1 || recs[0].Status != http.StatusUnsupportedMediaType {
		t.Errorf("the refused gateway's records: %+v (want the simple POST's 415 only)", recs)
	}
	if n := up.hits.Load(); n != 1 {
		t.Errorf("%d upstream calls, want 1 (the allowed stream)", n)
	}
	if !strings.Contains(refused.logs.String(), "cors preflight refused") {
		t.Errorf("the refused gateway logged no refused preflight: %s", refused.logs.String())
	}
}
