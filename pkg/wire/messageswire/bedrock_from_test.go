package messageswire

import (
	"slices"
	"testing"
)

func TestFromBedrockInvoke(t *testing.T) {
	in := `{"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["a-1","b-2"], "max_tokens":5,"messages":[{"role":"user","content":"hi"}],"stream":false,"x":{"y":1}}`
	out, betas, err := FromBedrockInvoke([]byte(in), "route-1", true)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"route-1","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}],"x":{"y":1}}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if !slices.Equal(betas, []string{"a-1", "b-2"}) {
		t.Errorf("betas %q", betas)
	}
	out, betas, err = FromBedrockInvoke([]byte(`{"max_tokens":1}`), "m", false)
	if err != nil || string(out) != `{"model":"m","max_tokens":1}` || betas != nil {
		t.Errorf("plain body: %s %q %v", out, betas, err)
	}
	for _, bad := range []string{``, `[]`, `{"anthropic_beta":"x"}`, `{"anthropic_beta":[1]}`, `{"a":`} {
		if _, _, err := FromBedrockInvoke([]byte(bad), "m", false); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
