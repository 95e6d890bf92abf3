package responses

import (
	"bytes"
	"encoding/json"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// The tools, tool_choice and text.format of the Prompt (see prompt.go for
// the mapping).

// tools decodes function tools, the functions of namespace tools
// (flattened, see NamespaceSep), custom tools and built-in tools.
func (d *promptDecoder) tools() error { return d.toolList("tools", d.w.Tools, "") }

func (d *promptDecoder) toolList(prefix string, list []json.RawMessage, namespace string) error {
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
				d.lose(p, "the namespaced function "+name+" (longer than a chat function name may be)", whyNative)
				continue
			}
			d.p.Tools = append(d.p.Tools, exchange.Tool{Kind: exchange.ToolFunction, Name: name, Description: t.Description,
				Schema: t.Parameters, Strict: t.Strict})
		case "namespace":
			if t.Name == "" || namespace != "" {
				return bad(p+".name", "%s: a namespace tool needs name and may not be nested", p)
			}
			if err := d.toolList(p+".tools", t.Tools, t.Name); err != nil {
				return err
			}
		case "custom":
			if t.Name == "" {
				return bad(p+".name", "%s: a custom tool needs name", p)
			}
			d.p.Tools = append(d.p.Tools, exchange.Tool{Kind: exchange.ToolCustom, Name: t.Name, Description: t.Description,
				Raw: bytes.TrimSpace(raw)})
		case "":
			return bad(p+".type", "%s: a tool needs type", p)
		default:
			if namespace != "" {
				d.lose(p, "the "+t.Type+" tool inside a namespace", whyNative)
				continue
			}
			d.p.Tools = append(d.p.Tools, exchange.Tool{Kind: exchange.ToolBuiltin, Type: t.Type, Name: t.Name,
				Description: t.Description, Raw: bytes.TrimSpace(raw)})
		}
	}
	return nil
}

// hasTool reports whether the Prompt offers a function or custom tool name.
func (d *promptDecoder) hasTool(kind exchange.ToolKind, name string) bool {
	for _, t := range d.p.Tools {
		if t.Kind == kind && t.Name == name {
			return true
		}
	}
	return false
}

// toolChoice decodes tool_choice: none, auto, required, or one function
// or custom tool.
func (d *promptDecoder) toolChoice() error {
	raw := d.w.ToolChoice
	tc := &d.p.ToolChoice
	switch kindOf(raw) {
	case 0, 'n':
		return nil
	case '"':
		var mode string
		if err := unmarshalAt("tool_choice", raw, &mode); err != nil {
			return err
		}
		switch mode {
		case "none":
			tc.Mode = exchange.ToolNone
		case "auto":
			tc.Mode = exchange.ToolAuto
		case "required":
			tc.Mode = exchange.ToolAny
		default:
			return bad("tool_choice", "tool_choice %q is not none, auto, required or a tool object", mode)
		}
		return nil
	case '{':
	default:
		return bad("tool_choice", "tool_choice must be a string or an object")
	}
	var w struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := unmarshalAt("tool_choice", raw, &w); err != nil {
		return err
	}
	switch w.Type {
	case "function", "custom":
		kind := exchange.ToolFunction
		if w.Type == "custom" {
			kind = exchange.ToolCustom
		}
		if w.Name == "" {
			return bad("tool_choice.name", "tool_choice of type %s needs name", w.Type)
		}
		if !d.hasTool(kind, w.Name) {
			return bad("tool_choice", "tool_choice names %s tool %q, which is not in tools", w.Type, w.Name)
		}
		tc.Mode, tc.Name = exchange.ToolNamed, w.Name
	case "":
		return bad("tool_choice.type", "tool_choice needs type")
	default:
		d.lose("tool_choice", "tool_choice of type "+w.Type, whyNative)
	}
	return nil
}

// format decodes text.format into Output.
func (d *promptDecoder) format() error {
	if d.w.Text == nil {
		return nil
	}
	raw := d.w.Text.Format
	switch kindOf(raw) {
	case 0, 'n':
		return nil
	case '{':
	default:
		return bad("text.format", "text.format must be an object")
	}
	var f struct {
		Type   string          `json:"type"`
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	}
	if err := unmarshalAt("text.format", raw, &f); err != nil {
		return err
	}
	o := &d.p.Output
	switch f.Type {
	case "text":
	case "json_object":
		o.Format = "json_object"
	case "json_schema":
		if f.Name == "" {
			return bad("text.format.name", "text.format of type json_schema needs name")
		}
		if kindOf(f.Schema) != '{' {
			return bad("text.format.schema", "text.format of type json_schema needs schema, a JSON Schema object")
		}
		o.Format, o.Schema, o.SchemaName = "json_schema", f.Schema, f.Name
		o.StrictSchema = f.Strict != nil && *f.Strict
	default:
		return bad("text.format.type", "text.format.type %q is not text, json_object or json_schema", f.Type)
	}
	return nil
}
