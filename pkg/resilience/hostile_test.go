package resilience

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// The hostile-input suite: every request here is answered with a clear
// 4xx in the OpenAI error shape, and no upstream - the configured one, or a
// trap server whose address the request tries to smuggle in - is called.

const hostileLimit = 8192 // server.max_body_bytes of the hostile gateway

// hostileEnv is a gateway with one configured upstream and a trap server
// that nothing in the config points at.
type hostileEnv struct {
	g    *gateway
	up   *fake
	trap *fake
}

func newHostileEnv(t *testing.T) *hostileEnv {
	up := newFake(t, openaiKind, script{words: words(3)})
	trap := newFake(t, openaiKind, script{words: []string{"TRAPPED"}})
	g := newGateway(t, fmt.Sprintf("server: {max_body_bytes: %d}\n", hostileLimit)+fastPolicy+fmt.Sprintf(`
providers:
  p0: {kind: openai, base_url: "%s/v1"}
routes:
  m: {targets: [{provider: p0, model: up-model}]}
`, up.URL))
	return &hostileEnv{g: g, up: up, trap: trap}
}

// calls is the number of upstream calls so far, configured and trap.
func (e *hostileEnv) calls() int64 { return e.up.hits.Load() + e.trap.hits.Load() }

// wantRejected checks an answer: the status, the OpenAI error shape (a
// message, type = the category, the gateway's headers), optionally the
// param and code, and that no upstream was called meanwhile.
func (e *hostileEnv) wantRejected(t *testing.T, resp *http.Response, body []byte, before int64, status int, param, code string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("status %d, want %d: %.300s", resp.StatusCode, status, body)
	}
	var env struct {
		Error *struct {
			Message  string  `json:"message"`
			Type     string  `json:"type"`
			Param    *string `json:"param"`
			Code     *string `json:"code"`
			Category string  `json:"category"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Error == nil || env.Error.Message == "" || env.Error.Type == "" || env.Error.Code == nil {
		t.Errorf("not the OpenAI error shape: %.300s", body)
	} else {
		if param != "" && (env.Error.Param == nil || *env.Error.Param != param) {
			t.Errorf("param = %v, want %q: %.300s", env.Error.Param, param, body)
		}
		if code != "" && *env.Error.Code != code {
			t.Errorf("code = %q, want %q: %.300s", *env.Error.Code, code, body)
		}
		if env.Error.Type != env.Error.Category || resp.Header.Get("x-gateway-error-category") != env.Error.Type {
			t.Errorf("type %q, category %q, header %q", env.Error.Type, env.Error.Category, resp.Header.Get("x-gateway-error-category"))
		}
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}
	if resp.Header.Get("x-request-id") == "" {
		t.Error("no x-request-id")
	}
	if n := e.calls() - before; n != 0 {
		t.Errorf("hostile input reached an upstream %d times", n)
	}
}

// send posts raw bytes (chunked when chunked is set) and returns the answer.
func (e *hostileEnv) send(t *testing.T, body []byte, chunked bool, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader = bytes.NewReader(body)
	if chunked {
		rd = io.MultiReader(rd) // no length known: Transfer-Encoding: chunked
	}
	req, _ := http.NewRequest(http.MethodPost, e.g.URL+"/v1/chat/completions", rd)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, out
}

// withField is a valid request body with one top-level field set to raw
// JSON (replacing model or messages when it is one of them).
func withField(name, raw string) string {
	fields := []string{`"model":"m"`, `"messages":[{"role":"user","content":"hi"}]`}
	switch name {
	case "model":
		fields[0] = `"model":` + raw
	case "messages":
		fields[1] = `"messages":` + raw
	default:
		fields = append(fields, fmt.Sprintf("%q:%s", name, raw))
	}
	return "{" + strings.Join(fields, ",") + "}"
}

// wrongTypes returns JSON values of the wrong type for a field of Go type
// typ, as chatwire.ChatRequest declares it.
func wrongTypes(typ reflect.Type) []string {
	switch typ {
	case reflect.TypeOf(chatwire.StopList{}):
		return []string{`5`, `{}`, `[1]`, `true`}
	case reflect.TypeOf(&chatwire.ToolChoice{}):
		return []string{`5`, `[]`, `true`}
	case reflect.TypeOf(json.RawMessage{}): // audio: an object
		return []string{`5`, `"x"`, `[]`, `true`}
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch typ.Kind() {
	case reflect.String:
		return []string{`123`, `{}`, `["m"]`, `true`}
	case reflect.Bool:
		return []string{`"true"`, `1`, `{}`}
	case reflect.Int, reflect.Int64:
		return []string{`"1"`, `1.5`, `{}`, `true`}
	case reflect.Float64:
		return []string{`"0.5"`, `true`, `[]`}
	case reflect.Slice:
		return []string{`"x"`, `{}`, `5`}
	case reflect.Map:
		return []string{`[]`, `"x"`, `5`, `{"k":{"nested":1}}`}
	case reflect.Struct:
		return []string{`"x"`, `[]`, `5`}
	}
	panic("no wrong types for " + typ.String())
}

// TestHostileWrongTypeForEveryField sends, for every top-level field of
// chatwire.ChatRequest (found by reflection, so a new field is covered
// the day it is added), values of the wrong JSON type.
func TestHostileWrongTypeForEveryField(t *testing.T) {
	e := newHostileEnv(t)
	typ := reflect.TypeOf(chatwire.ChatRequest{})
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		for _, raw := range wrongTypes(f.Type) {
			t.Run(name+"="+raw, func(t *testing.T) {
				before := e.calls()
				resp, out := e.send(t, []byte(withField(name, raw)), false)
				e.wantRejected(t, resp, out, before, 400, name, "")
			})
		}
	}
}

// TestHostileMalformedInput: malformed, truncated, deeply nested,
// oversized and invalid UTF-8 bodies, absurd numbers, unknown roles,
// duplicate and redirecting fields.
func TestHostileMalformedInput(t *testing.T) {
	e := newHostileEnv(t)
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	trapURL := e.trap.URL + "/v1"
	cases := []struct {
		name, body   string
		status       int
		param, code  string
		chunked      bool
		extraHeaders []string
	}{
		{name: "empty", body: ``, status: 400},
		{name: "whitespace", body: " \n\t ", status: 400},
		{name: "open brace", body: `{`, status: 400},
		{name: "trailing comma", body: `{"model":"m",` + msgs + `,}`, status: 400},
		{name: "single quotes", body: `{'model':'m',` + msgs + `}`, status: 400},
		{name: "unquoted keys", body: `{model:"m",` + msgs + `}`, status: 400},
		{name: "comment", body: `{"model":"m",/*x*/` + msgs + `}`, status: 400},
		{name: "trailing garbage", body: `{"model":"m",` + msgs + `}garbage`, status: 400},
		{name: "two documents", body: `{"model":"m",` + msgs + `}{"model":"m",` + msgs + `}`, status: 400},
		{name: "NaN", body: `{"model":"m",` + msgs + `,"temperature":NaN}`, status: 400},
		{name: "BOM", body: "\ufeff" + `{"model":"m",` + msgs + `}`, status: 400},
		{name: "raw control character in a string", body: "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\x01b\"}]}", status: 400},
		{name: "top-level array", body: `[{"model":"m",` + msgs + `}]`, status: 400},
		{name: "top-level string", body: `"m"`, status: 400},
		{name: "top-level null", body: `null`, status: 400},
		{name: "top-level number", body: `42`, status: 400},
		{name: "nested 65 deep", body: `{"model":"m",` + msgs + `,"metadata_x":` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}`, status: 400},
		{name: "nested 4000 deep", body: `{"model":"m",` + msgs + `,"x":` + strings.Repeat(`{"a":`, 4000) + "1" + strings.Repeat("}", 4000) + `}`, status: 400},
		{name: "unclosed nesting", body: `{"model":"m",` + msgs + `,"x":` + strings.Repeat("[", 8000), status: 400},
		{name: "invalid UTF-8 byte", body: "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", status: 400},
		{name: "invalid UTF-8 sequence", body: "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xc3\x28\"}]}", status: 400},
		{name: "overlong UTF-8", body: "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xc0\xaf\"}]}", status: 400},
		{name: "UTF-8 encoded surrogate", body: "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xed\xa0\x80\"}]}", status: 400},
		{name: "invalid UTF-8 in a key", body: "{\"model\":\"m\"," + msgs + ",\"\xfe\":1}", status: 400},
		{name: "duplicate model", body: `{"model":"m",` + msgs + `,"model":"other"}`, status: 400, param: "model"},
		{name: "duplicate model, escaped", body: `{"model":"m",` + msgs + `,"mod\u0065l":"other"}`, status: 400, param: "model"},
		{name: "missing model", body: `{` + msgs + `}`, status: 400, param: "model"},
		{name: "blank model", body: `{"model":"  ",` + msgs + `}`, status: 400, param: "model"},
		{name: "empty messages", body: `{"model":"m","messages":[]}`, status: 400, param: "messages"},
		{name: "unknown model", body: `{"model":"nope",` + msgs + `}`, status: 404, code: "model_not_found"},
		{name: "model is a URL", body: `{"model":"` + trapURL + `",` + msgs + `}`, status: 404, code: "model_not_found"},
		{name: "model is provider/model", body: `{"model":"p0/up-model",` + msgs + `}`, status: 404, code: "model_not_found"},
		{name: "stream_options without stream", body: `{"model":"m",` + msgs + `,"stream_options":{"include_usage":true}}`, status: 400, param: "stream_options"},
		{name: "tool message without id", body: `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, status: 400},
		{name: "tool_calls on a user message", body: `{"model":"m","messages":[{"role":"user","content":"x","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, status: 400},
		{name: "null content on a user message", body: `{"model":"m","messages":[{"role":"user","content":null}]}`, status: 400},
		{name: "unknown content part", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"video","video":"x"}]}]}`, status: 400},
		{name: "image part without url", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`, status: 400},
		{name: "tool_choice names a missing tool", body: `{"model":"m",` + msgs + `,"tool_choice":{"type":"function","function":{"name":"ghost"}}}`, status: 400, param: "tool_choice"},
		{name: "bad response_format", body: `{"model":"m",` + msgs + `,"response_format":{"type":"yaml"}}`, status: 400},
		{name: "five stop sequences", body: `{"model":"m",` + msgs + `,"stop":["a","b","c","d","e"]}`, status: 400, param: "stop"},
	}
	for _, v := range []string{`-1`, `0`, `-9223372036854775808`, `9223372036854775807`, `1000000000000`, `1e400`, `1.5`, `1e3`, `"100"`, `null1`} {
		for _, f := range []string{"max_tokens", "max_completion_tokens"} {
			status, param := 400, f
			if v == `null1` || v == `1e3` {
				param = "" // invalid JSON / a float for an int: rejected, field not always named
			}
			cases = append(cases, struct {
				name, body   string
				status       int
				param, code  string
				chunked      bool
				extraHeaders []string
			}{name: f + "=" + v, body: `{"model":"m",` + msgs + `,"` + f + `":` + v + `}`, status: status, param: param})
		}
	}
	for _, v := range []string{`-0.1`, `2.1`, `1e308`, `-1e308`} {
		cases = append(cases, struct {
			name, body   string
			status       int
			param, code  string
			chunked      bool
			extraHeaders []string
		}{name: "temperature=" + v, body: `{"model":"m",` + msgs + `,"temperature":` + v + `}`, status: 400, param: "temperature"})
	}
	for _, v := range []string{`0`, `129`, `-1`} {
		cases = append(cases, struct {
			name, body   string
			status       int
			param, code  string
			chunked      bool
			extraHeaders []string
		}{name: "n=" + v, body: `{"model":"m",` + msgs + `,"n":` + v + `}`, status: 400, param: "n"})
	}
	for _, role := range []string{"hacker", "System", "USER", "", "root", "usеr" /* Cyrillic е */, "user\u0000", "assistant "} {
		cases = append(cases, struct {
			name, body   string
			status       int
			param, code  string
			chunked      bool
			extraHeaders []string
		}{name: "role " + fmt.Sprintf("%q", role), body: `{"model":"m","messages":[{"role":` + quote(role) + `,"content":"x"}]}`, status: 400, param: "messages[0].role"})
	}
	// Fields some clients and proxies use to pick the upstream address or
	// credentials: the gateway refuses them by name.
	for _, f := range []string{"api_base", "base_url", "api_key", "api_version", "azure_endpoint", "custom_llm_provider", "endpoint", "organization", "extra_headers"} {
		cases = append(cases, struct {
			name, body   string
			status       int
			param, code  string
			chunked      bool
			extraHeaders []string
		}{name: "redirect field " + f, body: `{"model":"m",` + msgs + `,"` + f + `":` + quote(trapURL) + `}`, status: 400, param: f})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.calls()
			start := time.Now()
			resp, out := e.send(t, []byte(tc.body), tc.chunked, tc.extraHeaders...)
			e.wantRejected(t, resp, out, before, tc.status, tc.param, tc.code)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v to reject", d)
			}
		})
	}
	// Every prefix of a valid body is invalid.
	t.Run("truncated at every byte", func(t *testing.T) {
		full := `{"model":"m","stream":true,"messages":[{"role":"user","content":"héllo \"x\""}],"max_tokens":5}`
		for i := 0; i < len(full); i++ {
			before := e.calls()
			resp, out := e.send(t, []byte(full[:i]), i%2 == 0)
			if resp.StatusCode != 400 || e.calls() != before || !bytes.HasPrefix(out, []byte(`{"error":`)) {
				t.Fatalf("prefix %q: status %d, %d calls: %s", full[:i], resp.StatusCode, e.calls()-before, out)
			}
		}
	})
	if n := e.calls(); n != 0 {
		t.Errorf("hostile input reached an upstream %d times", n)
	}
}

// bodyOfSize is a valid request body of exactly n bytes (one long string).
func bodyOfSize(n int) string {
	head := `{"model":"m","messages":[{"role":"user","content":"`
	tail := `"}]}`
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

// TestHostileBodySizeLimit: bodies past max_body_bytes are refused
// (body_too_large) whether they announce their length, are chunked, or
// lie about it; a body at the limit, or one byte under, is served whole.
func TestHostileBodySizeLimit(t *testing.T) {
	e := newHostileEnv(t)
	for _, size := range []int{hostileLimit - 1, hostileLimit} {
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d bytes chunked=%v is served", size, chunked), func(t *testing.T) {
				before := e.up.hits.Load()
				body := bodyOfSize(size)
				resp, out := e.send(t, []byte(body), chunked)
				if resp.StatusCode != 200 || e.up.hits.Load() != before+1 {
					t.Fatalf("status %d: %.200s", resp.StatusCode, out)
				}
				got := e.up.requestBodies()[before]
				if !bytes.Contains(got, []byte(strings.Repeat("x", size-60))) || !bytes.Contains(got, []byte(`"model":"up-model"`)) {
					t.Errorf("the upstream did not get the body whole (%d bytes)", len(got))
				}
			})
		}
	}
	for _, size := range []int{hostileLimit + 1, 4 * hostileLimit, 1 << 20} {
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d bytes chunked=%v is refused", size, chunked), func(t *testing.T) {
				before := e.calls()
				resp, out := e.send(t, []byte(bodyOfSize(size)), chunked)
				e.wantRejected(t, resp, out, before, 400, "", "body_too_large")
			})
		}
	}
	// A Content-Length past the limit is refused before the body is read:
	// the client sends only a few bytes and waits.
	t.Run("content-length past the limit, body never sent", func(t *testing.T) {
		before := e.calls()
		resp, out := rawRequest(t, e.g.URL, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
			"Content-Length: 999999999\r\n\r\n{\"model\"", 5*time.Second)
		e.wantRejected(t, resp, out, before, 400, "", "body_too_large")
	})
	// Neither a length nor chunked: HTTP/1.1 says there is no body.
	t.Run("no content-length, not chunked", func(t *testing.T) {
		before := e.calls()
		resp, out := rawRequest(t, e.g.URL, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"+bodyOfSize(2*hostileLimit), 5*time.Second)
		e.wantRejected(t, resp, out, before, 400, "", "")
	})
}

// rawRequest writes raw bytes to the server at base and reads one
// response (bounded).
func rawRequest(t *testing.T, base, raw string, bound time.Duration) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), bound)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(bound))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, out
}

// TestHostileStreamWithBadAccept: a streaming request whose Accept admits
// no event stream is refused before any call; the Accept headers the SDKs
// send are fine.
func TestHostileStreamWithBadAccept(t *testing.T) {
	e := newHostileEnv(t)
	for _, accept := range []string{"application/xml", "text/html", "image/*", "application/octet-stream", "text/plain;q=1"} {
		t.Run(accept, func(t *testing.T) {
			before := e.calls()
			resp, out := e.send(t, []byte(streamBody), false, "Accept", accept)
			e.wantRejected(t, resp, out, before, 400, "", "not_acceptable")
		})
	}
	for _, accept := range []string{"", "application/json", "text/event-stream", "*/*", "text/event-stream, application/json;q=0.9"} {
		t.Run("ok "+accept, func(t *testing.T) {
			resp, out := e.send(t, []byte(streamBody), false, "Accept", accept)
			if resp.StatusCode != 200 || !bytes.HasSuffix(out, []byte("data: [DONE]\n\n")) {
				t.Errorf("Accept %q: status %d: %s", accept, resp.StatusCode, out)
			}
		})
	}
}

// TestHostileHeaderInjection: CR/LF (and other junk) in x-gateway-tag and
// x-request-id. At the network front door net/http refuses them; behind a
// front end that does not (the Lambda Function URL event hands headers to
// the handler as they came), the handler itself refuses a bad tag with a
// 400, replaces a bad request id with its own, and never writes either
// value into a response header or body.
func TestHostileHeaderInjection(t *testing.T) {
	e := newHostileEnv(t)
	const evil = "evil=1"
	injections := []string{
		"a\r\nSet-Cookie: " + evil,
		"a\nSet-Cookie: " + evil,
		"a\rSet-Cookie: " + evil,
		"a%0d%0aSet-Cookie:%20" + evil,
		"a\u2028Set-Cookie: " + evil,
		"a\x00Set-Cookie: " + evil,
		"ok-tag Set-Cookie: " + evil,
		strings.Repeat("t", 65),
	}
	leaks := func(t *testing.T, where string, resp *http.Response, out []byte) {
		t.Helper()
		for k, vs := range resp.Header {
			for _, v := range vs {
				if strings.ContainsAny(v, "\r\n") || strings.Contains(v, evil) || strings.EqualFold(k, "Set-Cookie") {
					t.Errorf("%s: response header %s: %q", where, k, v)
				}
			}
		}
		if bytes.Contains(out, []byte(evil)) {
			t.Errorf("%s: the injected value is echoed in the body: %s", where, out)
		}
	}
	for _, inj := range injections {
		t.Run(fmt.Sprintf("%q", inj), func(t *testing.T) {
			// Directly into the handler, as the Lambda front end would.
			for _, hdr := range []string{"x-gateway-tag", "x-request-id"} {
				before := e.calls()
				req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(chatBody))
				req.Header.Set("Content-Type", "application/json")
				req.Header[http.CanonicalHeaderKey(hdr)] = []string{inj}
				rec := httptest.NewRecorder()
				e.g.h.ServeHTTP(rec, req)
				resp := rec.Result()
				out := rec.Body.Bytes()
				leaks(t, "handler "+hdr, resp, out)
				if got := resp.Header.Get("x-request-id"); got == inj || !plainID(got) {
					t.Errorf("handler %s: x-request-id %q", hdr, got)
				}
				if hdr == "x-gateway-tag" {
					e.wantRejected(t, resp, out, before, 400, "x-gateway-tag", "")
				} else if resp.StatusCode != 200 {
					t.Errorf("a bad request id should be replaced, not refused: status %d %s", resp.StatusCode, out)
				}
			}
			// The same value in the body's metadata.tag.
			before := e.calls()
			resp, out := e.send(t, []byte(`{"model":"m","messages":[{"role":"user","content":"x"}],"metadata":{"tag":`+quote(inj)+`}}`), false)
			leaks(t, "metadata.tag", resp, out)
			e.wantRejected(t, resp, out, before, 400, "x-gateway-tag", "")
			// At the front door, over the wire: a real line break ends the
			// header line there (the rest is a request header of its own),
			// other junk is refused by net/http. Either way nothing is
			// echoed, and no client header is passed upstream.
			before = e.up.hits.Load()
			raw := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
				"X-Gateway-Tag: " + inj + "\r\nX-Request-Id: " + inj + "\r\n" +
				fmt.Sprintf("Content-Length: %d\r\nConnection: close\r\n\r\n%s", len(chatBody), chatBody)
			resp, out = rawRequest(t, e.g.URL, raw, 5*time.Second)
			leaks(t, "wire", resp, out)
			if resp.StatusCode >= 500 {
				t.Errorf("wire: status %d: %s", resp.StatusCode, out)
			}
			for i, h := range e.up.requestHeaders()[before:] {
				for k, vs := range h {
					if strings.Contains(strings.Join(vs, " "), evil) {
						t.Errorf("wire: upstream request %d carries the client's header %s: %q", i, k, vs)
					}
				}
			}
		})
	}
	if n := e.trap.hits.Load(); n != 0 {
		t.Errorf("trap called %d times", n)
	}
}

// plainID is the shape of a request id the gateway puts in x-request-id.
func plainID(s string) bool {
	if len(s) < 8 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// TestHostileNeverTakesUpstreamAddressFromRequest: whatever a request
// says about where it should go - body fields under any spelling or
// nesting, the Host header, an absolute-URL request target, forwarding
// headers - the only upstream ever called is the configured one, and it
// sees its own Host.
func TestHostileNeverTakesUpstreamAddressFromRequest(t *testing.T) {
	e := newHostileEnv(t)
	trapHost := strings.TrimPrefix(e.trap.URL, "http://")
	trapURL := e.trap.URL + "/v1"
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	bodies := []string{
		`{"model":"m",` + msgs + `,"API_BASE":` + quote(trapURL) + `}`,
		`{"model":"m",` + msgs + `,"Base_URL":` + quote(trapURL) + `}`,
		`{"model":"m",` + msgs + `,"apiBase":` + quote(trapURL) + `,"baseURL":` + quote(trapURL) + `,"url":` + quote(trapURL) + `,"host":` + quote(trapHost) + `}`,
		`{"model":"m",` + msgs + `,"extra_body":{"api_base":` + quote(trapURL) + `,"base_url":` + quote(trapURL) + `}}`,
		`{"model":"m",` + msgs + `,"user_config":{"model_list":[{"model_name":"m","litellm_params":{"model":"openai/x","api_base":` + quote(trapURL) + `}}]}}`,
		`{"model":"m",` + msgs + `,"metadata":{"base_url":` + quote(trapURL) + `,"tag":"t"}}`,
		`{"model":"m",` + msgs + `,"proxy":` + quote(trapURL) + `,"azure_deployment":` + quote(trapURL) + `}`,
	}
	for i, body := range bodies {
		t.Run(fmt.Sprintf("body %d", i), func(t *testing.T) {
			before := e.up.hits.Load()
			resp, out := e.send(t, []byte(body), false)
			switch {
			case resp.StatusCode == 200 && e.up.hits.Load() == before+1:
				if h := e.up.host(int(before)); h != strings.TrimPrefix(e.up.URL, "http://") {
					t.Errorf("the upstream saw Host %q", h)
				}
			case resp.StatusCode >= 400 && resp.StatusCode < 500 && e.up.hits.Load() == before:
			default:
				t.Errorf("status %d, %d upstream calls: %s", resp.StatusCode, e.up.hits.Load()-before, out)
			}
		})
	}
	wire := []struct{ name, raw string }{
		{"host header", "POST /v1/chat/completions HTTP/1.1\r\nHost: " + trapHost + "\r\n"},
		{"absolute-URL target", "POST " + e.trap.URL + "/v1/chat/completions HTTP/1.1\r\nHost: " + trapHost + "\r\n"},
		{"absolute-URL target, other host header", "POST " + e.trap.URL + "/v1/chat/completions HTTP/1.1\r\nHost: x\r\n"},
		{"forwarding headers", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Forwarded-Host: " + trapHost + "\r\nForwarded: host=" + trapHost + ";proto=http\r\nX-Forwarded-Proto: http\r\nX-Original-URL: " + e.trap.URL + "/v1/chat/completions\r\n"},
	}
	for _, w := range wire {
		t.Run(w.name, func(t *testing.T) {
			before := e.up.hits.Load()
			raw := w.raw + fmt.Sprintf("Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(chatBody), chatBody)
			resp, out := rawRequest(t, e.g.URL, raw, 5*time.Second)
			if resp.StatusCode != 200 || e.up.hits.Load() != before+1 || !bytes.Contains(out, []byte("w0 w1 w2")) {
				t.Fatalf("status %d, %d calls: %s", resp.StatusCode, e.up.hits.Load()-before, out)
			}
			if host := e.up.host(int(before)); host != strings.TrimPrefix(e.up.URL, "http://") {
				t.Errorf("the upstream saw Host %q", host)
			}
		})
	}
	for _, raw := range []string{
		"CONNECT " + trapHost + " HTTP/1.1\r\nHost: " + trapHost + "\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET " + e.trap.URL + "/healthz HTTP/1.1\r\nHost: " + trapHost + "\r\n\r\n",
	} {
		t.Run(strings.Fields(raw)[0]+" "+strings.Fields(raw)[1], func(t *testing.T) {
			resp, _ := rawRequest(t, e.g.URL, raw, 5*time.Second)
			if resp.StatusCode >= 500 {
				t.Errorf("status %d", resp.StatusCode)
			}
		})
	}
	if n := e.trap.hits.Load(); n != 0 {
		t.Errorf("the trap server was called %d times: the gateway took an upstream address from a request", n)
	}
}

// TestHostileCaseVariantFieldsAreNotReadDifferently: JSON keys are case
// sensitive and so are the OpenAI API and the gateway's byte-level
// rewriter, but encoding/json matches struct fields case-insensitively. A
// request must not be validated (and routed, limited, priced) on one value
// while the upstream receives another: a key that differs from a known
// field only by case is refused, before any call.
func TestHostileCaseVariantFieldsAreNotReadDifferently(t *testing.T) {
	e := newHostileEnv(t)
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	cases := map[string]string{
		// Routed on "m", forwarded with no model at all.
		"MODEL only": `{"MODEL":"m",` + msgs + `}`,
		// Validated with max_tokens 10 (a team's output ceiling passes),
		// the upstream reads 100000.
		"max_tokens twice": `{"model":"m",` + msgs + `,"max_tokens":100000,"Max_Tokens":10}`,
		// Served as a stream (SSE, stream_options added), the upstream
		// sees a non-streaming request: its JSON answer counts as a
		// provider failure, so a client can trip any target's breaker.
		"Stream": `{"model":"m",` + msgs + `,"Stream":true}`,
		// The gateway validates and estimates one conversation, the
		// upstream gets another.
		"messages twice": `{"model":"m","messages":[{"role":"user","content":"the upstream gets this one, unvalidated"}],"Messages":[{"role":"user","content":"hi"}]}`,
		// encoding/json folds case the Unicode way (bytes.EqualFold):
		// U+017F LATIN SMALL LETTER LONG S matches "s", and it is already
		// lower case, so strings.ToLower leaves it alone.
		"long s: stream":                `{"model":"m",` + msgs + `,"ſtream":true}`,
		"long s: max_tokens twice":      `{"model":"m",` + msgs + `,"max_tokens":100000,"max_tokenſ":10}`,
		"long s: messages twice":        `{"model":"m","messages":[{"role":"user","content":"the upstream gets this one"}],"meſſages":[{"role":"user","content":"hi"}]}`,
		"kelvin sign: max_tokens twice": `{"model":"m",` + msgs + `,"max_tokens":100000,"max_toKens":10}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			before := e.calls()
			resp, out := e.send(t, []byte(body), false)
			e.wantRejected(t, resp, out, before, 400, "", "")
		})
	}
}
