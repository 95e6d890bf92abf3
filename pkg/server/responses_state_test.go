package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/responsestate"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/embedded"
)

// statefulUpstream is an OpenAI Responses upstream that keeps state per
// account (provider and key), as OpenAI does: a response is visible only to
// the key's account that created it; previous_response_id of another
// account's response is OpenAI's 404 previous_response_not_found.
type statefulUpstream struct {
	*upstream
	name string
	mu   sync.Mutex
	n    int
	// owner maps a response id to the key that created it; obj to its
	// object; input to its input items.
	owner, obj, input map[string]string
	// calls lists "METHOD path key" of every call.
	calls []string
}

func newStatefulUpstream(t *testing.T, name string) *statefulUpstream {
	s := &statefulUpstream{name: name, owner: map[string]string{}, obj: map[string]string{}, input: map[string]string{}}
	s.upstream = newUpstream(t, s.serve)
	return s
}

func (s *statefulUpstream) calledWith() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func notFoundBody(w http.ResponseWriter, param, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(404)
	fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","param":%q,"code":%q}}`, msg, param, code)
}

func responseObject(id, status, model, text, usage string) string {
	out := "[]"
	if text != "" {
		out = `[{"id":"msg_` + id + `","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"` + text + `"}],"role":"assistant"}]`
	}
	if usage == "" {
		usage = "null"
	}
	return `{"id":"` + id + `","object":"response","created_at":1741290958,"status":"` + status + `","background":` +
		fmt.Sprint(status == "queued") + `,"model":"` + model + `","output":` + out + `,"usage":` + usage + `}`
}

const upUsage = `{"input_tokens":40,"input_tokens_details":{"cached_tokens":0},"output_tokens":9,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":49}`

func (s *statefulUpstream) serve(w http.ResponseWriter, r *http.Request, body []byte, _ int) {
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, r.Method+" "+r.URL.Path+" "+key)
	mine := func(id string) bool { return s.owner[id] == key }
	rest := strings.TrimPrefix(r.URL.Path, "/v1/responses")
	id, sub, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && rest == "":
		if prev := gjson.GetBytes(body, "previous_response_id").Str; prev != "" && !mine(prev) {
			notFoundBody(w, "previous_response_id", "previous_response_not_found", "Previous response with id '"+prev+"' not found.")
			return
		}
		s.n++
		nid := fmt.Sprintf("resp_%s_%d", s.name, s.n)
		s.owner[nid], s.input[nid] = key, gjson.GetBytes(body, "input").Raw
		model := gjson.GetBytes(body, "model").Str
		if gjson.GetBytes(body, "background").Bool() {
			s.obj[nid] = responseObject(nid, "completed", model, "later", upUsage) // done by the time it is polled
			io.WriteString(w, responseObject(nid, "queued", model, "", ""))
			return
		}
		s.obj[nid] = responseObject(nid, "completed", model, "from "+s.name, upUsage)
		if gjson.GetBytes(body, "stream").Bool() {
			w.Header().Set("Content-Type", "text/event-stream")
			created := strings.Replace(responseObject(nid, "in_progress", model, "", ""), `"status":"in_progress"`, `"status":"in_progress"`, 1)
			fmt.Fprintf(w, "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":%s}\n\n", created)
			fmt.Fprintf(w, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_%s\",\"output_index\":0,\"content_index\":0,\"delta\":\"from %s\",\"logprobs\":[]}\n\n", nid, s.name)
			fmt.Fprintf(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":%s}\n\n", s.obj[nid])
			return
		}
		io.WriteString(w, s.obj[nid])
	case rest == "/compact" && r.Method == http.MethodPost:
		if prev := gjson.GetBytes(body, "previous_response_id").Str; prev != "" && !mine(prev) {
			notFoundBody(w, "previous_response_id", "previous_response_not_found", "Previous response with id '"+prev+"' not found.")
			return
		}
		s.n++
		nid := fmt.Sprintf("cmp_%s_%d", s.name, s.n)
		s.owner[nid] = key
		fmt.Fprintf(w, `{"id":%q,"object":"response.compaction","created_at":1741290960,"output":[{"id":"cmpi_1","type":"compaction","encrypted_content":"gAAAA"}],"usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":0},"output_tokens":20,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":120}}`, nid)
	case !mine(id):
		notFoundBody(w, "", "not_found", "Response with id '"+id+"' not found.")
	case sub == "" && r.Method == http.MethodGet:
		io.WriteString(w, s.obj[id])
	case sub == "" && r.Method == http.MethodDelete:
		delete(s.owner, id)
		fmt.Fprintf(w, `{"id":%q,"object":"response","deleted":true}`, id)
	case sub == "input_items" && r.Method == http.MethodGet:
		fmt.Fprintf(w, `{"object":"list","data":[{"id":"msg_in","type":"message","role":"user","status":"completed","content":[{"type":"input_text","text":%s}]}],"first_id":"msg_in","last_id":"msg_in","has_more":false,"x_limit":%q}`,
			s.input[id], r.URL.Query().Get("limit"))
	case sub == "cancel" && r.Method == http.MethodPost:
		s.obj[id] = strings.Replace(s.obj[id], `"status":"completed"`, `"status":"cancelled"`, 1)
		io.WriteString(w, s.obj[id])
	default:
		w.WriteHeader(400)
	}
}

// stateConfig is route m over two Responses-native providers in the order
// given, provider a with keys A1 and A2 in the order given.
func stateConfig(order []string, aKeys []string, aURL, bURL, extraA string) string {
	var b strings.Builder
	b.WriteString(fastPolicy + "providers:\n")
	fmt.Fprintf(&b, "  a: {kind: openai, base_url: %q, apis: [responses], keys: [", aURL+"/v1")
	for i, k := range aKeys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{env: %s}", k)
	}
	b.WriteString("]}\n")
	fmt.Fprintf(&b, "  b: {kind: openai, base_url: %q, apis: [responses], keys: [{env: STATE_KEY_B}]}\n", bURL+"/v1")
	b.WriteString("routes:\n  m:\n    attempts: 1\n    targets:\n")
	for _, p := range order {
		extra := ""
		if p == "a" {
			extra = extraA
		}
		fmt.Fprintf(&b, "      - {provider: %s, model: up-%s%s}\n", p, p, extra)
	}
	return b.String()
}

// sharedOwners gives gateway instances one owner store (the table every
// instance shares in production).
func sharedOwners(t *testing.T) func(*server.Options) {
	st := embedded.OpenMemory()
	t.Cleanup(func() { st.Close() })
	owners := responsestate.New(st, responsestate.Options{})
	return func(o *server.Options) { o.Upstream.ResponseOwners = owners }
}

func teamAuth(o *server.Options) {
	o.Front.Authenticate = func(r *http.Request) (*exchange.Caller, error) {
		return &exchange.Caller{Team: r.Header.Get("x-test-team")}, nil
	}
}

func doReq(t *testing.T, method, url, body string, hdr ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, readAll(t, resp.Body)
}

func setStateKeys(t *testing.T) {
	t.Setenv("STATE_KEY_A1", "sk-a1-secret")
	t.Setenv("STATE_KEY_A2", "sk-a2-secret")
	t.Setenv("STATE_KEY_B", "sk-b-secret")
}

// TestResponsesStateFollowsItsAccount: a response created on one gateway
// instance (target a, its key A2) is continued, read, listed, cancelled,
// compacted and deleted through a second instance sharing the store whose
// own order would pick target b and key A1: every call goes to a with A2.
func TestResponsesStateFollowsItsAccount(t *testing.T) {
	setStateKeys(t)
	a, b := newStatefulUpstream(t, "a"), newStatefulUpstream(t, "b")
	shared := sharedOwners(t)
	g1 := newGateway(t, stateConfig([]string{"a", "b"}, []string{"STATE_KEY_A2", "STATE_KEY_A1"}, a.URL, b.URL, ""), shared, teamAuth)
	g2 := newGateway(t, stateConfig([]string{"b", "a"}, []string{"STATE_KEY_A1", "STATE_KEY_A2"}, a.URL, b.URL, ""), shared, teamAuth)
	team := []string{"x-test-team", "t1"}

	code, out := doReq(t, "POST", g1.URL+"/v1/responses", `{"model":"m","input":"hello"}`, team...)
	id := gjson.Get(out, "id").Str
	if code != 200 || id != "resp_a_1" {
		t.Fatalf("create on instance 1: %d %s", code, out)
	}
	// A streamed creation is recorded as its id passes, too.
	code, out = doReq(t, "POST", g1.URL+"/v1/responses", `{"model":"m","input":"hi","stream":true}`, append(team, "Accept", "text/event-stream")...)
	if code != 200 || !strings.Contains(out, "resp_a_2") {
		t.Fatalf("streamed create: %d %s", code, out)
	}

	code, out = doReq(t, "POST", g2.URL+"/v1/responses", `{"model":"m","input":"more","previous_response_id":"`+id+`"}`, team...)
	if code != 200 || !strings.Contains(out, "from a") {
		t.Errorf("follow-up on instance 2: %d %s (want it served by a, which holds %s)", code, out, id)
	}
	code, out = doReq(t, "GET", g2.URL+"/v1/responses/resp_a_2", "", team...)
	if code != 200 || gjson.Get(out, "id").Str != "resp_a_2" {
		t.Errorf("GET on instance 2: %d %s", code, out)
	}
	code, out = doReq(t, "GET", g2.URL+"/v1/responses/"+id+"/input_items?limit=5", "", team...)
	if code != 200 || gjson.Get(out, "data.0.content.0.text").Str != "hello" || gjson.Get(out, "x_limit").Str != "5" {
		t.Errorf("input_items: %d %s", code, out)
	}
	code, out = doReq(t, "POST", g2.URL+"/v1/responses/"+id+"/cancel", "", team...)
	if code != 200 || gjson.Get(out, "status").Str != "cancelled" {
		t.Errorf("cancel: %d %s", code, out)
	}
	code, out = doReq(t, "POST", g2.URL+"/v1/responses/compact", `{"model":"m","previous_response_id":"`+id+`"}`, team...)
	if code != 200 || gjson.Get(out, "object").Str != "response.compaction" {
		t.Errorf("compact: %d %s", code, out)
	}
	// Another team cannot see the response, and b never gets a call.
	if code, out = doReq(t, "GET", g2.URL+"/v1/responses/"+id, "", "x-test-team", "t2"); code != 404 || gjson.Get(out, "error.code").Str != "response_not_found" {
		t.Errorf("another team's GET: %d %s", code, out)
	}
	code, out = doReq(t, "DELETE", g2.URL+"/v1/responses/"+id, "", team...)
	if code != 200 || !gjson.Get(out, "deleted").Bool() {
		t.Errorf("delete: %d %s", code, out)
	}
	if code, out = doReq(t, "GET", g1.URL+"/v1/responses/"+id, "", team...); code != 404 || gjson.Get(out, "error.code").Str != "response_not_found" {
		t.Errorf("GET after delete, on instance 1: %d %s", code, out)
	}
	for _, c := range a.calledWith() {
		if !strings.HasSuffix(c, " sk-a2-secret") {
			t.Errorf("a was called with another key than the one that created the response: %q", c)
		}
	}
	if calls := b.calledWith(); len(calls) != 0 {
		t.Errorf("b (no state of these responses) was called: %v", calls)
	}
	recs := g2.recs()
	ops := map[string]exchange.Record{}
	for _, r := range recs {
		if _, ok := ops[r.Operation]; !ok {
			ops[r.Operation] = r
		}
	}
	if r := ops[server.OperationResponsesCompact]; r.InputTokens != 100 || r.OutputTokens != 20 || r.Target != "a/up-a" {
		t.Errorf("compaction record = %+v", r)
	}
	if r := ops[server.OperationResponsesRetrieve]; r.ResponseID == "" || r.Target != "a/up-a" {
		t.Errorf("retrieve record = %+v", r)
	}
}

// TestResponsesAccountUnavailableIsATypedError: when the account holding
// the response cannot be used (its target's breaker open, its key gone),
// the follow-up and the retrieval are refused with
// response_account_unavailable, and no other account is asked.
func TestResponsesAccountUnavailableIsATypedError(t *testing.T) {
	setStateKeys(t)
	a, b := newStatefulUpstream(t, "a"), newStatefulUpstream(t, "b")
	shared := sharedOwners(t)
	g1 := newGateway(t, stateConfig([]string{"a", "b"}, []string{"STATE_KEY_A2", "STATE_KEY_A1"}, a.URL, b.URL, ""), shared)
	code, out := doReq(t, "POST", g1.URL+"/v1/responses", `{"model":"m","input":"hello"}`)
	id := gjson.Get(out, "id").Str
	if code != 200 || id == "" {
		t.Fatalf("create: %d %s", code, out)
	}
	before := len(a.calledWith())
	for name, tc := range map[string]struct{ cfg, why string }{
		"breaker open": {stateConfig([]string{"b", "a"}, []string{"STATE_KEY_A1", "STATE_KEY_A2"}, a.URL, b.URL, ", breaker: open"), "circuit breaker is open"},
		"key gone":     {stateConfig([]string{"b", "a"}, []string{"STATE_KEY_A1"}, a.URL, b.URL, ""), "provider key that created it is not usable"},
	} {
		g2 := newGateway(t, tc.cfg, shared)
		for _, c := range []struct{ method, path, body string }{
			{"POST", "/v1/responses", `{"model":"m","input":"more","previous_response_id":"` + id + `"}`},
			{"GET", "/v1/responses/" + id, ""},
		} {
			code, out := doReq(t, c.method, g2.URL+c.path, c.body)
			if code != 502 || gjson.Get(out, "error.code").Str != server.CodeResponseAccount || !strings.Contains(out, `a/up-a`) ||
				!strings.Contains(out, tc.why) || strings.Contains(out, "sk-a") {
				t.Errorf("%s, %s %s: %d %s; want 502 %s naming the target, never the key", name, c.method, c.path, code, out, server.CodeResponseAccount)
			}
		}
	}
	if n := len(a.calledWith()); n != before {
		t.Errorf("a was called %d times while unavailable", n-before)
	}
	if calls := b.calledWith(); len(calls) != 0 {
		t.Errorf("another account answered: %v", calls)
	}
}

// TestResponsesBackground: background: true on a route that can only
// translate is refused with 400 and no upstream call; on a native target
// the queued response is the answer (one upstream job, never retried as
// empty), recorded as queued with its input estimated, and the retrieval
// that first sees it finished records its settled tokens once.
func TestResponsesBackground(t *testing.T) {
	chat := newUpstream(t, okHandler)
	gc := newGateway(t, responsesRoute([2]string{"chat", chat.URL}))
	code, out := doReq(t, "POST", gc.URL+"/v1/responses", `{"model":"m","input":"long job","background":true}`)
	if code != 400 || !strings.Contains(out, "background") || chat.hits.Load() != 0 {
		t.Errorf("background on a translating target: %d %s, %d upstream calls", code, out, chat.hits.Load())
	}

	setStateKeys(t)
	a, b := newStatefulUpstream(t, "a"), newStatefulUpstream(t, "b")
	g := newGateway(t, stateConfig([]string{"a", "b"}, []string{"STATE_KEY_A1"}, a.URL, b.URL, ""))
	code, out = doReq(t, "POST", g.URL+"/v1/responses", `{"model":"m","input":"long job","background":true}`)
	id := gjson.Get(out, "id").Str
	if code != 200 || gjson.Get(out, "status").Str != "queued" || id == "" {
		t.Fatalf("native background: %d %s", code, out)
	}
	if n := len(a.calledWith()) + len(b.calledWith()); n != 1 {
		t.Errorf("%d upstream jobs started for one background request", n)
	}
	rec := g.waitRecs(t, 1)[0]
	if rec.Outcome != server.OutcomeQueued || !rec.Estimated || rec.InputTokens == 0 || rec.ResponseID != id {
		t.Errorf("creation record = %+v; want queued, input estimated, the id", rec)
	}
	for i := 0; i < 2; i++ {
		if code, out = doReq(t, "GET", g.URL+"/v1/responses/"+id, ""); code != 200 || gjson.Get(out, "status").Str != "completed" {
			t.Fatalf("poll: %d %s", code, out)
		}
	}
	recs := g.waitRecs(t, 3)
	if r := recs[1]; r.OutputTokens != 9 || r.InputTokens != 40-rec.InputTokens || r.Estimated {
		t.Errorf("settling record = %+v; want the true output and the input beyond the estimate %d", r, rec.InputTokens)
	}
	if r := recs[2]; r.InputTokens != 0 || r.OutputTokens != 0 {
		t.Errorf("a second poll recorded tokens again: %+v", r)
	}
}

// TestResponsesStoredCallsNeedANativeTarget: compaction on a route that
// can only translate is a 400 naming the target, with no upstream call;
// an id the gateway never created is a 404 in OpenAI's shape; a wrong
// method is a 405 with Allow.
func TestResponsesStoredCallsNeedANativeTarget(t *testing.T) {
	chat := newUpstream(t, okHandler)
	g := newGateway(t, responsesRoute([2]string{"chat", chat.URL}))
	code, out := doReq(t, "POST", g.URL+"/v1/responses/compact", `{"model":"m","input":"hi"}`)
	if code != 400 || gjson.Get(out, "error.code").Str != "unsupported_feature" || !strings.Contains(out, "p0/up-model-0") || chat.hits.Load() != 0 {
		t.Errorf("compact on a translating route: %d %s (%d upstream calls)", code, out, chat.hits.Load())
	}
	for _, p := range []string{"/v1/responses/resp_nope", "/v1/responses/resp_nope/input_items"} {
		if code, out := doReq(t, "GET", g.URL+p, ""); code != 404 || gjson.Get(out, "error.code").Str != server.CodeResponseNotFound || gjson.Get(out, "error.type").Str == "" {
			t.Errorf("GET %s: %d %s", p, code, out)
		}
	}
	if code, out := doReq(t, "PUT", g.URL+"/v1/responses/resp_nope", "{}"); code != 405 || !strings.Contains(out, "method") {
		t.Errorf("PUT: %d %s", code, out)
	}
	// Authenticated like every endpoint.
	locked := newGateway(t, responsesRoute([2]string{"chat", chat.URL}), func(o *server.Options) {
		o.Front.Authenticate = func(r *http.Request) (*exchange.Caller, error) { return nil, nil }
	})
	for _, c := range [][2]string{{"GET", "/v1/responses/resp_1"}, {"DELETE", "/v1/responses/resp_1"}, {"POST", "/v1/responses/resp_1/cancel"},
		{"GET", "/v1/responses/resp_1/input_items"}, {"POST", "/v1/responses/compact"}} {
		if code, out := doReq(t, c[0], locked.URL+c[1], ""); code != 401 || gjson.Get(out, "error.type").Str == "" {
			t.Errorf("%s %s without a key: %d %s", c[0], c[1], code, out)
		}
	}
}

// gatedOwners is an owner table whose writes wait for open to be closed;
// written is set once a write has ended.
type gatedOwners struct {
	responsestate.Store
	open    chan struct{}
	entered atomic.Bool
	written atomic.Bool
}

func (g *gatedOwners) Put(ctx context.Context, it store.Item, c store.Cond) (store.Item, error) {
	g.entered.Store(true)
	<-g.open
	defer g.written.Store(true)
	return g.Store.Put(ctx, it, c)
}

// A foreground Responses stream does not wait for its owner's write before
// its first frames (the write runs beside the stream), and its terminal
// event waits for the write: a client holding the whole response finds its
// owner recorded on every instance.
func TestResponsesStreamOwnerWriteIsOffTheFirstByte(t *testing.T) {
	setStateKeys(t)
	a, b := newStatefulUpstream(t, "a"), newStatefulUpstream(t, "b")
	mem := embedded.OpenMemory()
	t.Cleanup(func() { mem.Close() })
	g := &gatedOwners{Store: mem, open: make(chan struct{})}
	owners := func(o *server.Options) { o.Upstream.ResponseOwners = responsestate.New(g, responsestate.Options{}) }
	gw := newGateway(t, stateConfig([]string{"a", "b"}, []string{"STATE_KEY_A1"}, a.URL, b.URL, ""), owners, teamAuth)
	req, _ := http.NewRequest("POST", gw.URL+"/v1/responses", strings.NewReader(`{"model":"m","input":"hi","stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-test-team", "t1")
	type line struct {
		text string
		err  error
	}
	lines := make(chan line, 64)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			lines <- line{err: err}
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- line{text: sc.Text()}
		}
		lines <- line{err: io.EOF}
	}()
	defer func() {
		select {
		case <-g.open:
		default:
			close(g.open)
		}
	}()
	next := func(what string) string {
		t.Helper()
		for {
			select {
			case l := <-lines:
				if l.err != nil {
					t.Fatalf("waiting for %s: %v", what, l.err)
				}
				if strings.HasPrefix(l.text, "data: ") {
					return l.text
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no %s within 10 s while the owner write waits (write entered: %v): the stream waits for the write", what, g.entered.Load())
			}
		}
	}
	if l := next("response.created"); !strings.Contains(l, `"response.created"`) {
		t.Fatalf("first frame %s", l)
	}
	t.Logf("after created: entered %v", g.entered.Load())
	if l := next("the delta"); !strings.Contains(l, "output_text.delta") {
		t.Fatalf("second frame %s", l)
	}
	t.Logf("after delta: entered %v", g.entered.Load())
	select { // the upstream sent response.completed with the delta
	case l := <-lines:
		if strings.Contains(l.text, "response.completed") {
			t.Fatal("the terminal event went out before the response's owner was written")
		}
	case <-time.After(200 * time.Millisecond):
	}
	close(g.open)
	if l := next("response.completed"); !strings.Contains(l, "response.completed") {
		t.Fatalf("last frame %s", l)
	}
	if !g.written.Load() {
		t.Fatal("response.completed reached the client before the owner write ended")
	}
}
