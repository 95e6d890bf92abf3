package chatwire

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/tidwall/gjson"
)

// ToolCall is an assistant message's tool call.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is a tool call's function name and JSON-encoded arguments.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is a tool definition. Function tools are read into Function; a
// tool of any other type (custom, and types newer than this code) keeps
// the client's own JSON in Raw: it is forwarded as it is to
// OpenAI-compatible targets and refused by translating ones.
type Tool struct {
	Type     string          `json:"type"`
	Function FunctionDef     `json:"function"`
	CacheCtl json.RawMessage `json:"cache_control,omitempty"`
	// Raw is the whole tool object of a non-function tool (set by Parse).
	Raw json.RawMessage `json:"-"`
}

// MarshalJSON writes a non-function tool as the client sent it.
func (t Tool) MarshalJSON() ([]byte, error) {
	if t.Type != "function" && len(t.Raw) > 0 {
		return t.Raw, nil
	}
	type plain Tool
	return json.Marshal(plain(t))
}

// FunctionDef describes a callable function.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ToolChoice is tool_choice: "none", "auto", "required", a named function,
// or an object of another type (allowed_tools, custom, and types newer than
// this code), which keeps the client's own JSON in Raw: forwarded as it is
// to OpenAI-compatible targets, refused by translating ones.
type ToolChoice struct {
	Mode     string // none, auto, required, function, or another object's type
	Function string // the forced function's name when Mode is function
	// Raw is the client's object when Mode is not one of the above.
	Raw json.RawMessage
}

// Known reports whether the choice is one every translator understands:
// none, auto, required or a named function.
func (t *ToolChoice) Known() bool {
	switch t.Mode {
	case "none", "auto", "required", "function":
		return true
	}
	return false
}

// MarshalJSON writes the choice in the wire form it came in.
func (t ToolChoice) MarshalJSON() ([]byte, error) {
	switch t.Mode {
	case "none", "auto", "required":
		return json.Marshal(t.Mode)
	case "function":
		var fn struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		fn.Type, fn.Function.Name = "function", t.Function
		return json.Marshal(fn)
	}
	if len(t.Raw) > 0 {
		return t.Raw, nil
	}
	return []byte("null"), nil
}

// UnmarshalJSON accepts the string modes, {"type":"function","function":
// {"name":...}} and any other object with a type.
func (t *ToolChoice) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &t.Mode); err != nil {
			return err
		}
		switch t.Mode {
		case "none", "auto", "required":
			return nil
		}
		return fieldValueError("tool_choice", "must be none, auto, required or a function object")
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if len(b) == 0 || b[0] != '{' {
		return fieldTypeError("tool_choice", "a string or an object")
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		// Only a function choice's fields are read; another type's are its own.
		var typ struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(b, &typ) != nil || typ.Type == "function" || typ.Type == "" {
			return fieldTypeError("tool_choice", "a string or an object")
		}
		obj.Type = typ.Type
	}
	switch obj.Type {
	case "":
		return fieldValueError("tool_choice", "an object must have a type")
	case "function":
		if obj.Function.Name == "" {
			return fieldValueError("tool_choice", "an object must be {\"type\":\"function\",\"function\":{\"name\":...}}")
		}
		t.Mode, t.Function = "function", obj.Function.Name
		return nil
	}
	t.Mode, t.Raw = obj.Type, append(json.RawMessage(nil), b...)
	return nil
}

// keepRawTools keeps the client's own JSON of every non-function tool.
func (r *ChatRequest) keepRawTools(body []byte) {
	for i := range r.Tools {
		if r.Tools[i].Type != "function" {
			r.Tools[i].Raw = json.RawMessage(gjson.GetBytes(body, "tools."+strconv.Itoa(i)).Raw)
		}
	}
}

func (r *ChatRequest) hasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}
