package responses

import (
	"encoding/json"

	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// NamespaceSep joins a namespace and a function name into the one chat
// function name a translated namespace tool is offered as
// ("multi_agent_v1__spawn_agent"); the encoder splits a call back into the
// function_call item's namespace and name.
const NamespaceSep = "__"

// maxFunctionName is the longest function name chat APIs accept.
const maxFunctionName = 64

// tools translates function tools, and the functions of namespace tools
// (flattened, see NamespaceSep); every other tool type (web_search,
// file_search, custom, tool_search, mcp, ...) needs a native upstream.
func (d *decoded) tools() error {
	return d.toolList("tools", d.wire.Tools, "")
}

func (d *decoded) toolList(prefix string, list []json.RawMessage, namespace string) error {
	for i, raw := range list {
		p := at("%s[%d]", prefix, i)
		if kindOf(raw) != '{' {
			return bad(p, "%s must be an object", p)
		}
		var t wireTool
		if err := unmarshalAt(p, raw, &t); err != nil {
			return err
		}
		switch t.Type {
		case "function":
			if t.Name == "" {
				return bad(p+".name", "%s: a function tool needs name", p)
			}
			name := t.Name
			if namespace != "" {
				name = namespace + NamespaceSep + t.Name
			}
			if namespace != "" && len(name) > maxFunctionName {
				d.nativeOnly(p, "the namespaced function "+name+" (longer than a chat function name may be)", whyNative)
				continue
			}
			d.chat.Tools = append(d.chat.Tools, chatwire.Tool{Type: "function", Function: chatwire.FunctionDef{
				Name: name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict}})
		case "namespace":
			if t.Name == "" || namespace != "" {
				return bad(p+".name", "%s: a namespace tool needs name and may not be nested", p)
			}
			if err := d.toolList(p+".tools", t.Tools, t.Name); err != nil {
				return err
			}
		case "":
			return bad(p+".type", "%s: a tool needs type", p)
		default:
			d.nativeOnly(p, "the "+t.Type+" tool", whyNative)
		}
	}
	return nil
}

func (d *decoded) hasFunction(name string) bool {
	for _, t := range d.chat.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}

// toolChoice translates tool_choice: none, auto, required, or one function.
func (d *decoded) toolChoice() error {
	raw := d.wire.ToolChoice
	switch kindOf(raw) {
	case 0, 'n':
		return nil
	case '"':
		var mode string
		if err := unmarshalAt("tool_choice", raw, &mode); err != nil {
			return err
		}
		switch mode {
		case "none", "auto", "required":
			d.chat.ToolChoice = &chatwire.ToolChoice{Mode: mode}
			return nil
		}
		return bad("tool_choice", "tool_choice %q is not none, auto, required or a tool object", mode)
	case '{':
	default:
		return bad("tool_choice", "tool_choice must be a string or an object")
	}
	var tc struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := unmarshalAt("tool_choice", raw, &tc); err != nil {
		return err
	}
	switch tc.Type {
	case "function":
		if tc.Name == "" {
			return bad("tool_choice.name", "tool_choice of type function needs name")
		}
		if !d.hasFunction(tc.Name) {
			return bad("tool_choice", "tool_choice names function %q, which is not in tools", tc.Name)
		}
		d.chat.ToolChoice = &chatwire.ToolChoice{Mode: "function", Function: tc.Name}
	case "":
		return bad("tool_choice.type", "tool_choice needs type")
	default:
		d.nativeOnly("tool_choice", "tool_choice of type "+tc.Type, whyNative)
	}
	return nil
}

// format translates text.format into response_format.
func (d *decoded) format() error {
	if d.wire.Text == nil {
		return nil
	}
	raw := d.wire.Text.Format
	switch kindOf(raw) {
	case 0, 'n':
		return nil
	case '{':
	default:
		return bad("text.format", "text.format must be an object")
	}
	var f struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict,omitempty"`
	}
	if err := unmarshalAt("text.format", raw, &f); err != nil {
		return err
	}
	switch f.Type {
	case "text":
	case "json_object":
		d.chat.ResponseFormat = &chatwire.ResponseFormat{Type: "json_object"}
	case "json_schema":
		if f.Name == "" {
			return bad("text.format.name", "text.format of type json_schema needs name")
		}
		if kindOf(f.Schema) != '{' {
			return bad("text.format.schema", "text.format of type json_schema needs schema, a JSON Schema object")
		}
		js, err := json.Marshal(struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict,omitempty"`
		}{f.Name, f.Description, f.Schema, f.Strict})
		if err != nil {
			return bad("text.format.schema", "text.format.schema is not valid JSON")
		}
		d.chat.ResponseFormat = &chatwire.ResponseFormat{Type: "json_schema", JSONSchema: js}
	default:
		return bad("text.format.type", "text.format.type %q is not text, json_object or json_schema", f.Type)
	}
	return nil
}
