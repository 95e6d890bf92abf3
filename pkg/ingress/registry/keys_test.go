package registry

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
)

// keyAttacks are, per API, a valid body and the places where a nested object
// can carry a case-variant or duplicate key that encoding/json would read
// differently from the upstream (the review's
// {"content": "<phrase>", "Content": "hello"}). Each place is a string
// replacement of the valid body.
var keyAttacks = map[exchange.API]struct {
	valid  string
	places map[string][2]string
}{
	exchange.Chat: {
		valid: `{"model":"m","messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"ok"}],"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}}}]}`,
		places: map[string][2]string{
			"user content case":     {`"content":"hello"`, `"content":"forbidden","Content":"hello"`},
			"assistant content dup": {`"content":"ok"`, `"content":"forbidden","content":"ok"`},
			"tool description case": {`"description":"d"`, `"description":"forbidden","DESCRIPTION":"d"`},
			"escaped key":           {`"content":"hello"`, `"content":"forbidden","\u0043ontent":"hello"`},
			"unicode fold (long s)": {`"role":"user"`, `"role":"user","ſtream":1,"stream":2`},
			"schema duplicate":      {`{"type":"object"}`, `{"type":"object","type":"string"}`},
		},
	},
	exchange.Messages: {
		valid: `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"sys"}],"messages":[{"role":"user","content":[{"type":"text","text":"hello"}]}],"tools":[{"name":"f","description":"d","input_schema":{"type":"object"}}]}`,
		places: map[string][2]string{
			"block text case":       {`"text":"hello"`, `"text":"forbidden","Text":"hello"`},
			"system text dup":       {`"text":"sys"`, `"text":"forbidden","text":"sys"`},
			"tool description case": {`"description":"d"`, `"description":"forbidden","Description":"d"`},
		},
	},
	exchange.Responses: {
		valid: `{"model":"m","instructions":"i","input":[{"role":"user","content":[{"type":"input_text","text":"hello"}]}]}`,
		places: map[string][2]string{
			"input text case":  {`"text":"hello"`, `"text":"forbidden","TEXT":"hello"`},
			"message role dup": {`"role":"user"`, `"role":"developer","role":"user"`},
		},
	},
	exchange.Embeddings: {
		valid: `{"model":"m","input":"hello"}`,
		places: map[string][2]string{
			"top-level dup": {`"input":"hello"`, `"input":"forbidden","input":"hello"`},
		},
	},
}

func TestEveryIngressRefusesCaseVariantAndDuplicateKeys(t *testing.T) {
	seen := map[exchange.API]bool{}
	for _, e := range Ingresses {
		in := e.Ingress
		attack, ok := keyAttacks[in.API()]
		if !ok {
			t.Errorf("%s: no key attack listed for this ingress", in.API())
			continue
		}
		seen[in.API()] = true
		decoders := map[string]func(*http.Request, []byte, *exchange.Request) error{"Decode": in.Decode}
		if c, ok := in.(ingress.Counter); ok {
			decoders["DecodeCount"] = c.DecodeCount
		}
		for dname, decode := range decoders {
			path := e.Paths
			if dname == "DecodeCount" {
				path = e.CountPaths
			}
			body := attack.valid
			if dname == "DecodeCount" {
				body = strings.Replace(body, `"max_tokens":5,`, ``, 1)
			}
			run := func(b string) error {
				r := httptest.NewRequest(http.MethodPost, path[0], strings.NewReader(b))
				return decode(r, []byte(b), &exchange.Request{API: in.API()})
			}
			if err := run(body); err != nil {
				t.Fatalf("%s %s: the valid body is refused: %v", in.API(), dname, err)
			}
			for name, p := range attack.places {
				b := strings.Replace(body, p[0], p[1], 1)
				if b == body {
					t.Fatalf("%s %s: place %q not found in the body", in.API(), dname, name)
				}
				err := run(b)
				var ge *gwerr.Error
				if !errors.As(err, &ge) || ge.Category != gwerr.InvalidRequest || ge.Param == "" {
					t.Errorf("%s %s %s: got %v, want invalid_request naming the key", in.API(), dname, name, err)
				}
			}
		}
	}
	if len(seen) != len(keyAttacks) {
		t.Errorf("ingresses tested: %v", seen)
	}
}
