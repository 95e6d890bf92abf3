package moderation

import "testing"

func TestParseVerdict(t *testing.T) {
	for in, want := range map[string]*verdict{
		`{"verdict":"allow","category":""}`:                        {},
		` {"verdict":"ALLOW"} `:                                    {},
		`{"verdict":"block","category":"self-harm"}`:               {block: true, category: "self-harm"},
		`{"verdict":"block"}`:                                      {block: true, category: "policy"},
		"```json\n{\"verdict\":\"block\",\"category\":\"x\"}\n```": {block: true, category: "x"},
		"```\n{\"verdict\":\"allow\",\"reason\":\"ok\"}\n```":      {},
		`{"verdict":"maybe"}`:                                      nil,
		`{"category":"x"}`:                                         nil,
		`{"verdict":true}`:                                         nil,
		`{"verdict":"allow"} and more`:                             nil,
		`The verdict is {"verdict":"allow"}`:                       nil,
		"```json\n{\"verdict\":\"allow\"}":                         nil,
		``:                                                         nil,
		`[{"verdict":"allow"}]`:                                    nil,
	} {
		got, ok := parseVerdict(in)
		if want == nil {
			if ok {
				t.Errorf("%q accepted as %+v", in, got)
			}
			continue
		}
		if !ok || got != *want {
			t.Errorf("%q: %+v %v, want %+v", in, got, ok, *want)
		}
	}
}
