package chatwire

import "testing"

func TestEditMembersKeepsEveryOtherByte(t *testing.T) {
	body := []byte(`{ "model" : "claude-x",  "max_tokens":64000,"context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]},
 "tools":[{"name":"t","defer_loading":true,"input_schema":{"type":"object"}}], "nested":{"model":"keep"} }`)
	got, err := EditMembers(nil, body, func(key string, v []byte) ([]byte, bool) {
		switch key {
		case "model":
			return []byte(`"up"`), true
		case "max_tokens":
			return []byte(`100`), string(v) == "64000"
		}
		return nil, false
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{ "model" : "up",  "max_tokens":100,"context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]},
 "tools":[{"name":"t","defer_loading":true,"input_schema":{"type":"object"}}], "nested":{"model":"keep"} }`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	same, _ := EditMembers(nil, body, func(string, []byte) ([]byte, bool) { return nil, false })
	if string(same) != string(body) {
		t.Errorf("no edit changed the body: %s", same)
	}
}

func TestMembersVisitsTopLevelInOrderWithUnescapedKeys(t *testing.T) {
	var keys, vals []string
	err := Members([]byte(`{"a":1,"b\u0063":{"x":[1,2]},"s":"q\"}"}`), func(k string, v []byte) bool {
		keys, vals = append(keys, k), append(vals, string(v))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 || keys[1] != "bc" || vals[1] != `{"x":[1,2]}` || vals[2] != `"q\"}"` {
		t.Errorf("keys %q values %q", keys, vals)
	}
	if err := Members([]byte(`[1]`), func(string, []byte) bool { return true }); err == nil {
		t.Error("an array was accepted as an object")
	}
}

func TestToolChoiceRoundTrips(t *testing.T) {
	for _, in := range []string{`"none"`, `"auto"`, `"required"`, `{"type":"function","function":{"name":"get_weather"}}`} {
		var tc ToolChoice
		if err := tc.UnmarshalJSON([]byte(in)); err != nil {
			t.Fatal(err)
		}
		out, err := tc.MarshalJSON()
		if err != nil || string(out) != in {
			t.Errorf("%s -> %s (%v)", in, out, err)
		}
	}
}

func TestSetMemberReplacesOrAddsOneMember(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"model":"m", "service_tier" : "auto","x":1}`, `{"model":"m", "service_tier" : "priority","x":1}`},
		{`{"model":"m",  "x":[1,{"service_tier":"a"}]}`, `{"model":"m",  "x":[1,{"service_tier":"a"}],"service_tier":"priority"}`},
		{`{ }`, `{ "service_tier":"priority"}`},
	} {
		got, err := SetMember([]byte(c.in), "service_tier", []byte(`"priority"`))
		if err != nil || string(got) != c.want {
			t.Errorf("SetMember(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}
