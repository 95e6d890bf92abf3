package status

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
)

// chromium finds a headless Chromium (Debian's chromium package), or
// skips.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-headless-shell", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on PATH (apt-get install --no-install-recommends chromium)")
	return ""
}

// browse runs headless Chromium on url in a window of the given width
// with extra flags, letting the page's scripts run for a few seconds of
// virtual time (its fetch completes; its refresh timer fires too).
func browse(t *testing.T, browser, url string, width int, flags ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The profile is removed best-effort: a helper's late write must not
	// fail the test, as t.TempDir's cleanup would.
	profile, err := os.MkdirTemp("", "chromium-profile-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(profile)
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir=" + profile, "--virtual-time-budget=15000", "--window-size=" + strconv.Itoa(width) + ",2900"}, flags...)
	cmd := exec.CommandContext(ctx, browser, append(args, url)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.Output()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers left in its process group
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return out
}

// fleetServer serves the page and its data as the gateway's front does:
// the page to anyone, the data to the admin key only.
func fleetServer(t *testing.T) *httptest.Server {
	o := seededFleet(t)
	data := Handler(o)
	mux := http.NewServeMux()
	mux.Handle(PagePath, Page())
	mux.Handle(DataPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer ops-admin-key" {
			r = r.WithContext(exchange.WithCaller(r.Context(), &exchange.Caller{Team: "ops", KeyID: "k1", Admin: true}))
		} else if r.Header.Get("Authorization") == "" {
			writeErr(w, gwerr.New(gwerr.Authentication, "missing API key"), 0)
			return
		}
		data.ServeHTTP(w, r)
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestStatusPageInChromium: the page, opened in a narrow window with the
// admin key in its fragment, shows the seeded fleet: the open and
// half-open breakers, the overloads and the TTFT percentiles, the key
// cooling down, search's spend against its budgets, the failed reload, and
// the copyable commands; it fits the window. A screenshot is saved as a
// test artifact (go test -artifacts; LLMGW_STATUS_SCREENSHOT=path writes
// one there too, as docs/img/status.png was made).
func TestStatusPageInChromium(t *testing.T) {
	browser := chromium(t)
	srv := fleetServer(t)
	url := srv.URL + PagePath + "#key=ops-admin-key"
	dom := string(browse(t, browser, url, 420, "--dump-dom"))
	if !strings.Contains(dom, `data-rendered="2026-12-01T14:30:00Z"`) {
		t.Fatalf("the page did not render the data:\n%s", dom)
	}
	shot := filepath.Join(t.ArtifactDir(), "status.png")
	browse(t, browser, url, 420, "--screenshot="+shot)
	png, err := os.ReadFile(shot)
	if err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("no screenshot: %v", err)
	}
	if out := os.Getenv("LLMGW_STATUS_SCREENSHOT"); out != "" {
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	card := func(attr string) string {
		re := regexp.MustCompile(`(?s)<div class="card[^"]*" ` + regexp.QuoteMeta(attr) + `>.*?</details></div>`)
		return re.FindString(dom)
	}
	for _, c := range []struct{ where, want string }{
		{card(`data-target="claude-sonnet:anthropic/claude-sonnet-4-5"`), `<span class="pill open">open</span>`},
		{card(`data-target="claude-sonnet:anthropic/claude-sonnet-4-5"`), `errors: overloaded ×3, timeout ×1`},
		{card(`data-target="claude-sonnet:bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0"`), `<span class="pill half_open">half_open</span>`},
		{card(`data-target="claude-sonnet:openai/gpt-4.1"`), `TTFT p50 420 ms · p95 1200 ms (5 streams)`},
		{card(`data-target="claude-sonnet:openai/gpt-4.1"`), `<span class="pill closed">closed</span>`},
		{card(`data-provider="openai"`), `1/2 keys`},
		{card(`data-provider="openai"`), `openai#2-b71c · gpt-4.1 · rate_limited until 2026-12-01 14:30:20Z`},
		{card(`data-team="search"`), `$41.30 of $50.00`},
		{card(`data-team="search"`), `tag checkout: $10.40 of $10.00`},
		{card(`data-team="search"`), `aws ssm put-parameter --overwrite --type String --name /llmgw/prod/config/90-incident --value '{"teams":{"search":{"disabled":true}}}'`},
		{card(`data-target="claude-sonnet:anthropic/claude-sonnet-4-5"`), `--value '{"routes":{"claude-sonnet":{"targets":[{"provider":"anthropic","model":"claude-sonnet-4-5","attempts":2,"first_token_timeout":"4s","breaker":"closed"}`},
		{dom, `unknown provider "bedrok"`},
		{dom, `9f2c4e1b7a3d5f60`},
	} {
		if !strings.Contains(c.where, c.want) {
			t.Errorf("the page does not show %q in:\n%.600s", c.want, c.where)
		}
	}
	// The open breaker's commands are unfolded: that is the incident.
	if !strings.Contains(card(`data-target="claude-sonnet:anthropic/claude-sonnet-4-5"`), "<details open=") {
		t.Error("the open target's runbook commands are folded")
	}
	if !strings.Contains(dom, `data-fits="true"`) {
		t.Error("the page is wider than a 420 px window")
	}
	if strings.Contains(dom, "ops-admin-key") {
		t.Error("the key stayed in the page's address")
	}
}

// TestStatusPageAsksForAKey: without a key the page shows its key form
// and the refusal, and no fleet data.
func TestStatusPageAsksForAKey(t *testing.T) {
	browser := chromium(t)
	srv := fleetServer(t)
	dom := string(browse(t, browser, srv.URL+PagePath, 420, "--dump-dom"))
	if !strings.Contains(dom, `<form id="login" style="display: block;">`) || !strings.Contains(dom, "missing API key") || strings.Contains(dom, "claude-sonnet") {
		t.Errorf("keyless page:\n%s", dom)
	}
}
