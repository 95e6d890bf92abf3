package embeddings

import (
	"reflect"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
)

func TestDecodeInputShapes(t *testing.T) {
	for name, tc := range map[string]struct {
		body string
		want exchange.EmbedRequest
	}{
		"string":       {`{"model":"m","input":"a"}`, exchange.EmbedRequest{Inputs: []string{"a"}, EncodingFormat: "float"}},
		"strings":      {`{"model":"m","input":["a","b"],"dimensions":256,"user":"u"}`, exchange.EmbedRequest{Inputs: []string{"a", "b"}, Dimensions: 256, User: "u", EncodingFormat: "float"}},
		"tokens":       {`{"model":"m","input":[1,2,3],"encoding_format":"base64"}`, exchange.EmbedRequest{Tokens: [][]int{{1, 2, 3}}, EncodingFormat: "base64"}},
		"token arrays": {`{"model":"m","input":[[1],[2,3]],"stream":false}`, exchange.EmbedRequest{Tokens: [][]int{{1}, {2, 3}}, EncodingFormat: "float"}},
	} {
		var req exchange.Request
		if err := (Ingress{}).Decode(nil, []byte(tc.body), &req); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if req.Route != "m" || string(req.Body) != tc.body || req.Stream || !reflect.DeepEqual(*req.Embed, tc.want) {
			t.Errorf("%s: route %q embed %+v", name, req.Route, *req.Embed)
		}
	}
}

func TestEncoderWritesTheWholeBodyAtEnd(t *testing.T) {
	enc := Ingress{}.NewEncoder(&exchange.Request{})
	raw := []byte(`{"object":"list","data":[]}`)
	if out := enc.Event(nil, &exchange.Event{Kind: exchange.Raw, Raw: raw, RawAPI: exchange.Embeddings, Flags: exchange.Whole}); len(out) != 0 {
		t.Errorf("Event wrote %q before End", out)
	}
	raw[0] = 'x' // the encoder owns its copy
	if got := string(enc.End(nil, exchange.TokenUsage{})); got != `{"object":"list","data":[]}` {
		t.Errorf("End = %s", got)
	}
}
