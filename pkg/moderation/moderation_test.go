package moderation_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
)

// Every outcome of both layers, under fail_closed and fail_open, streamed
// and not: a violation blocks in both modes; an error, a timeout or a
// malformed answer blocks under fail_closed - before any generation call -
// and passes under fail_open within the layer's timeout; layer two runs
// only when layer one passed (or, fail_open, failed).
func TestModerationErrorMatrix(t *testing.T) {
	w := newWorld(t)
	type want struct {
		status        int
		code          string
		gen, ep, judg int32
	}
	allowed := want{200, "", 1, 1, 1}
	blocked := func(ep, judge int32) want { return want{400, gwerr.CodeContentPolicyViolation, 0, ep, judge} }
	unavailable := func(ep, judge int32) want { return want{502, gwerr.CodeModerationUnavailable, 0, ep, judge} }
	for _, c := range []struct {
		route, endpoint, judge string
		want                   want
	}{
		{"closed", "allow", "allow", allowed},
		{"closed", "allow", "fenced", allowed},
		{"closed", "flag", "allow", blocked(1, 0)},
		{"closed", "500", "allow", unavailable(1, 0)},
		{"closed", "timeout", "allow", unavailable(1, 0)},
		{"closed", "malformed", "allow", unavailable(1, 0)},
		{"closed", "allow", "block", blocked(1, 1)},
		{"closed", "allow", "500", unavailable(1, 1)},
		{"closed", "allow", "timeout", unavailable(1, 1)},
		{"closed", "allow", "malformed", unavailable(1, 1)},
		{"closed", "allow", "badverdict", unavailable(1, 1)},
		{"open", "allow", "allow", allowed},
		{"open", "flag", "allow", blocked(1, 0)},
		{"open", "allow", "block", blocked(1, 1)},
		{"open", "500", "allow", allowed},
		{"open", "timeout", "allow", allowed},
		{"open", "malformed", "block", blocked(1, 1)},
		{"open", "allow", "500", allowed},
		{"open", "allow", "timeout", allowed},
		{"open", "timeout", "timeout", allowed},
		{"open", "allow", "malformed", allowed},
		{"refused", "", "", unavailable(0, 0)},         // the endpoint refuses connections
		{"narrow", "flag", "", want{200, "", 1, 1, 0}}, // flagged, but not in the policy's categories
		{"narrow", "minors", "", blocked(1, 0)},
	} {
		for _, stream := range []bool{false, true} {
			name := c.route + "/" + c.endpoint + "/" + c.judge
			w.endpoint.set(c.endpoint)
			w.judge.set(c.judge)
			w.calls()
			r := w.ask(t, c.route, "", "hi", stream)
			gen, ep, judge := w.calls()
			got := want{r.status, r.code(), gen, ep, judge}
			if got != c.want {
				t.Errorf("%s (stream %v): got %+v, want %+v\n%s", name, stream, got, c.want, r.body)
				continue
			}
			if r.status != 200 && (strings.Contains(r.body, "data:") || !strings.Contains(r.body, `"error"`)) {
				t.Errorf("%s: a refusal must be a plain error response: %s", name, r.body)
			}
			// Fail open is bounded: at most the two layers' timeouts.
			if r.took > 2*time.Second {
				t.Errorf("%s: took %s", name, r.took)
			}
			rec := w.last()
			if c.want.status != 200 && rec.Outcome != string(gwerr.As(&gwerr.Error{Category: categoryOf(c.want.code)}).Category) {
				t.Errorf("%s: record outcome %q", name, rec.Outcome)
			}
			if n := stageAttempts(rec, exchange.StageModerationInput); n != int(ep+judge) && c.route != "refused" {
				t.Errorf("%s: %d moderation attempts in the trace, %d calls", name, n, ep+judge)
			}
		}
	}
}

func categoryOf(code string) gwerr.Category {
	if code == gwerr.CodeModerationUnavailable {
		return gwerr.Unavailable
	}
	return gwerr.ContentPolicy
}

func stageAttempts(rec exchange.Record, stage string) int {
	n := 0
	for _, a := range rec.Attempts {
		if a.Stage == stage {
			n++
		}
	}
	return n
}

// Every decision is one log line naming the policy, direction, layer,
// outcome, category and latency; no log line ever holds the text. The
// endpoint gets the provider's key and the text; the check's tokens are
// priced into the request's cost; a team's policy applies on any route.
func TestModerationDecisionsAreLoggedWithoutText(t *testing.T) {
	w := newWorld(t)
	w.endpoint.set("allow")
	w.judge.set("block")
	r := w.ask(t, "plain", "kids", "hi", false) // the team's policy
	if r.status != 400 || r.code() != gwerr.CodeContentPolicyViolation || !strings.Contains(r.body, "category: violence") {
		t.Fatalf("team policy: %d %s", r.status, r.body)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(w.logs.String()), "\n") {
		var m map[string]any
		json.Unmarshal([]byte(l), &m)
		if m["msg"] == "moderation" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%d decision lines, want 2 (endpoint, check):\n%s", len(lines), w.logs.String())
	}
	if l := lines[1]; l["policy"] != "closed" || l["direction"] != "input" || l["layer"] != "check" || l["outcome"] != "block" ||
		l["category"] != "violence" || l["latency_ms"] == nil || l["request_id"] == "" {
		t.Errorf("decision line %v", l)
	}
	if strings.Contains(w.logs.String(), sentinel) {
		t.Fatal("the prompt's text reached the logs")
	}
	if w.endpoint.auths[0] != "Bearer "+modKey || !strings.Contains(w.endpoint.texts[0], sentinel) || !strings.Contains(w.judge.texts[0], sentinel) {
		t.Errorf("endpoint auth %q, texts %q %q", w.endpoint.auths[0], w.endpoint.texts, w.judge.texts)
	}
	rec := w.last()
	if want := 60 / 1e6; rec.CostUSD < want*0.999 || rec.CostUSD > want*1.001 {
		t.Errorf("cost %g, want the check's 60 tokens at $1/M: %g", rec.CostUSD, want)
	}
	if strings.Contains(w.logs.String(), modKey) {
		t.Error("the moderation key reached the logs")
	}
}

// Output moderation holds the whole answer, streamed or not: a violating
// answer is never sent (the client gets a plain content_policy error), a
// clean one is sent whole after the check; an answer too large to hold
// blocks under fail_closed and is released under fail_open.
func TestOutputModerationHoldsTheAnswer(t *testing.T) {
	w := newWorld(t)
	w.endpoint.set("allow")
	w.judge.set("content")
	for _, stream := range []bool{false, true} {
		w.calls()
		r := w.ask(t, "out", "", "say it", stream)
		gen, _, judge := w.calls()
		if r.status != 400 || r.code() != gwerr.CodeContentPolicyViolation || strings.Contains(r.body, badWord) || gen != 1 || judge != 2 {
			t.Fatalf("stream %v: %d %s (gen %d, judge %d)", stream, r.status, r.body, gen, judge)
		}
		rec := w.last()
		if rec.Outcome != "content_policy" || rec.OutputTokens != 3 || stageAttempts(rec, exchange.StageModerationOutput) != 2 {
			t.Fatalf("record %+v", rec)
		}
		r = w.ask(t, "out", "", "hi", stream)
		if r.status != 200 || !strings.Contains(r.body, "Hello") || !strings.Contains(r.body, " world") {
			t.Fatalf("clean answer, stream %v: %d %s", stream, r.status, r.body)
		}
		if stream && !strings.HasSuffix(r.body, "data: [DONE]\n\n") {
			t.Fatalf("the held stream did not end cleanly: %s", r.body)
		}
		if r := w.ask(t, "outsmall", "", "hi", stream); r.status != 502 || r.code() != gwerr.CodeModerationUnavailable || strings.Contains(r.body, "Hello") {
			t.Fatalf("too large, fail_closed: %d %s", r.status, r.body)
		}
		if r := w.ask(t, "outsmallopen", "", "hi", stream); r.status != 200 || !strings.Contains(r.body, " world") {
			t.Fatalf("too large, fail_open: %d %s", r.status, r.body)
		}
	}
	if strings.Contains(w.logs.String(), badWord) || strings.Contains(w.logs.String(), sentinel) {
		t.Fatal("text reached the logs")
	}
}
