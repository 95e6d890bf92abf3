package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

// JSON Schema -> Gemini Schema (an OpenAPI 3.0 subset), for tool
// parameters and response_format json_schema.
//
// Converted: type (a type list with "null" becomes nullable), format,
// title, description, enum and const (strings only), properties (their
// order kept as propertyOrdering), required, items, minItems, maxItems,
// minProperties, maxProperties, minLength, maxLength, pattern, minimum,
// maximum, anyOf (a {"type":"null"} branch becomes nullable; one branch
// left is inlined), allOf of one schema, default, example and examples
// (the first), and local references (#/$defs/..., #/definitions/...),
// inlined. Dropped as annotations: $schema, $id, $comment, $defs,
// definitions, readOnly, writeOnly, deprecated, and a boolean
// additionalProperties (Gemini emits only the declared properties).
//
// Anything else is rejected as unsupported, naming the keyword: oneOf,
// not, if/then/else, tuple items, prefixItems, patternProperties, an
// additionalProperties schema, multipleOf, exclusive bounds, uniqueItems,
// non-string enums, recursive references, and an object without
// properties below the top level (Gemini rejects empty OBJECT schemas).

// maxSchemaDepth bounds nesting, references included.
const maxSchemaDepth = 32

// annotations are keywords dropped without loss of meaning for Gemini.
var annotations = map[string]bool{"$schema": true, "$id": true, "$comment": true, "$defs": true, "definitions": true,
	"readOnly": true, "writeOnly": true, "deprecated": true}

// schemaConv converts one schema document.
type schemaConv struct {
	t    *translator
	defs map[string]json.RawMessage // "#/$defs/x" -> schema
}

// convertSchema converts the JSON Schema raw; param names it in errors.
func (t *translator) convertSchema(param string, raw json.RawMessage) (*schema, error) {
	c := &schemaConv{t: t, defs: map[string]json.RawMessage{}}
	var root map[string]json.RawMessage
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, t.invalid(param, "%s is not a JSON Schema object", param)
	}
	for _, k := range []string{"$defs", "definitions"} {
		var defs map[string]json.RawMessage
		if json.Unmarshal(root[k], &defs) == nil {
			for name, d := range defs {
				c.defs["#/"+k+"/"+name] = d
			}
		}
	}
	return c.convert(param, raw, 0, nil)
}

func (c *schemaConv) unsupported(at, what string) error {
	return c.t.unsupported(at, what+" in a JSON Schema")
}

// convert converts the schema raw at path at.
func (c *schemaConv) convert(at string, raw json.RawMessage, depth int, refs []string) (*schema, error) {
	if depth > maxSchemaDepth {
		return nil, c.unsupported(at, "nesting deeper than 32 levels")
	}
	keys, m, err := object(raw)
	if err != nil {
		return nil, c.t.invalid(at, "%s is not a JSON Schema object", at)
	}
	if ref, ok := m["$ref"]; ok {
		return c.ref(at, ref, m, depth, refs)
	}
	s := &schema{}
	for _, k := range keys {
		v := m[k]
		kp := at + "." + k
		var err error
		switch k {
		case "type":
			err = c.typ(kp, v, s)
		case "format", "title", "description", "pattern":
			var str string
			if err = json.Unmarshal(v, &str); err != nil {
				return nil, c.t.invalid(kp, "%s must be a string", kp)
			}
			switch k {
			case "format":
				s.Format = str
			case "title":
				s.Title = str
			case "description":
				s.Description = str
			default:
				s.Pattern = str
			}
		case "nullable":
			err = json.Unmarshal(v, &s.Nullable)
		case "enum", "const":
			err = c.enum(kp, k, v, s)
		case "items":
			if t := bytes.TrimSpace(v); len(t) > 0 && t[0] == '[' {
				return nil, c.unsupported(kp, "tuple items")
			}
			s.Items, err = c.convert(kp, v, depth+1, refs)
		case "properties":
			err = c.properties(kp, v, s, depth, refs)
		case "required":
			err = json.Unmarshal(v, &s.Required)
		case "minItems", "maxItems", "minProperties", "maxProperties", "minLength", "maxLength":
			var n int64
			if err = json.Unmarshal(v, &n); err == nil {
				*countField(s, k) = &n
			}
		case "minimum", "maximum":
			var f float64
			if err = json.Unmarshal(v, &f); err == nil {
				if k == "minimum" {
					s.Minimum = &f
				} else {
					s.Maximum = &f
				}
			}
		case "anyOf":
			err = c.anyOf(kp, v, s, depth, refs)
		case "allOf":
			err = c.allOf(kp, v, s, depth, refs)
		case "default":
			s.Default = v
		case "example":
			s.Example = v
		case "examples":
			var ex []json.RawMessage
			if json.Unmarshal(v, &ex) == nil && len(ex) > 0 {
				s.Example = ex[0]
			}
		case "additionalProperties":
			if t := string(bytes.TrimSpace(v)); t != "true" && t != "false" {
				return nil, c.unsupported(kp, "an additionalProperties schema")
			}
		default:
			if !annotations[k] {
				return nil, c.unsupported(kp, fmt.Sprintf("keyword %q", k))
			}
		}
		if err != nil {
			if ge := (*gwerr.Error)(nil); errors.As(err, &ge) {
				return nil, err
			}
			return nil, c.t.invalid(kp, "%s has the wrong type", kp)
		}
	}
	if s.Type == "OBJECT" && len(s.Properties) == 0 && depth > 0 {
		return nil, c.unsupported(at, "an object without properties (a free-form object)")
	}
	return s, nil
}

// countField returns the field of s for a count keyword (minItems,
// maxLength...).
func countField(s *schema, k string) **int64 {
	switch k {
	case "minItems":
		return &s.MinItems
	case "maxItems":
		return &s.MaxItems
	case "minProperties":
		return &s.MinProperties
	case "maxProperties":
		return &s.MaxProperties
	case "minLength":
		return &s.MinLength
	}
	return &s.MaxLength
}

// typ reads type: a name, or a list whose "null" makes the schema nullable.
func (c *schemaConv) typ(at string, v json.RawMessage, s *schema) error {
	var names []string
	if json.Unmarshal(v, &names) != nil {
		var one string
		if err := json.Unmarshal(v, &one); err != nil {
			return c.t.invalid(at, "%s must be a string or a list of strings", at)
		}
		names = []string{one}
	}
	var kept []string
	for _, n := range names {
		if n == "null" && len(names) > 1 {
			s.Nullable = true
			continue
		}
		switch n {
		case "string", "number", "integer", "boolean", "array", "object", "null":
			kept = append(kept, strings.ToUpper(n))
		default:
			return c.t.invalid(at, "%s %q is not a JSON Schema type", at, n)
		}
	}
	if len(kept) != 1 {
		return c.unsupported(at, "a list of several types")
	}
	s.Type = kept[0]
	return nil
}

// enum reads enum or const: strings only.
func (c *schemaConv) enum(at, k string, v json.RawMessage, s *schema) error {
	var vals []string
	var err error
	if k == "const" {
		var one string
		err = json.Unmarshal(v, &one)
		vals = []string{one}
	} else {
		err = json.Unmarshal(v, &vals)
	}
	if err != nil {
		return c.unsupported(at, "a "+k+" of non-string values")
	}
	s.Enum = append(s.Enum, vals...)
	if s.Type == "" {
		s.Type = "STRING"
	}
	return nil
}

// properties converts properties in their order, recorded as
// propertyOrdering.
func (c *schemaConv) properties(at string, v json.RawMessage, s *schema, depth int, refs []string) error {
	keys, m, err := object(v)
	if err != nil {
		return c.t.invalid(at, "%s must be an object", at)
	}
	s.Properties = make(map[string]*schema, len(keys))
	for _, k := range keys {
		ps, err := c.convert(at+"."+k, m[k], depth+1, refs)
		if err != nil {
			return err
		}
		s.Properties[k] = ps
	}
	if len(keys) > 1 {
		s.PropertyOrdering = keys
	}
	return nil
}

// anyOf converts the branches; a null branch makes s nullable, and a
// single branch left is merged into s.
func (c *schemaConv) anyOf(at string, v json.RawMessage, s *schema, depth int, refs []string) error {
	var branches []json.RawMessage
	if err := json.Unmarshal(v, &branches); err != nil || len(branches) == 0 {
		return c.t.invalid(at, "%s must be a non-empty list of schemas", at)
	}
	var kept []*schema
	for i, b := range branches {
		if string(bytes.Join(bytes.Fields(b), nil)) == `{"type":"null"}` {
			s.Nullable = true
			continue
		}
		bs, err := c.convert(fmt.Sprintf("%s[%d]", at, i), b, depth+1, refs)
		if err != nil {
			return err
		}
		kept = append(kept, bs)
	}
	if len(kept) == 1 {
		merge(s, kept[0])
		return nil
	}
	s.AnyOf = kept
	return nil
}

// allOf accepts one schema, merged into s.
func (c *schemaConv) allOf(at string, v json.RawMessage, s *schema, depth int, refs []string) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(v, &parts); err != nil || len(parts) != 1 {
		return c.unsupported(at, "allOf of several schemas")
	}
	ps, err := c.convert(at+"[0]", parts[0], depth+1, refs)
	if err != nil {
		return err
	}
	merge(s, ps)
	return nil
}

// ref inlines a local reference; a description next to it wins.
func (c *schemaConv) ref(at string, v json.RawMessage, m map[string]json.RawMessage, depth int, refs []string) (*schema, error) {
	var ref string
	_ = json.Unmarshal(v, &ref)
	target, ok := c.defs[ref]
	if !ok {
		return nil, c.unsupported(at+".$ref", fmt.Sprintf("reference %q (only #/$defs/... and #/definitions/... are inlined)", ref))
	}
	for _, r := range refs {
		if r == ref {
			return nil, c.unsupported(at+".$ref", fmt.Sprintf("recursive reference %q", ref))
		}
	}
	s, err := c.convert(at, target, depth+1, append(refs[:len(refs):len(refs)], ref))
	if err != nil {
		return nil, err
	}
	var d string
	if json.Unmarshal(m["description"], &d) == nil && d != "" {
		s.Description = d
	}
	var n bool
	if json.Unmarshal(m["nullable"], &n) == nil && n {
		s.Nullable = true
	}
	return s, nil
}

// merge copies into dst what src sets and dst does not.
func merge(dst, src *schema) {
	nullable, desc := dst.Nullable || src.Nullable, dst.Description
	title, def, ex := dst.Title, dst.Default, dst.Example
	*dst = *src
	dst.Nullable = nullable
	if desc != "" {
		dst.Description = desc
	}
	if title != "" {
		dst.Title = title
	}
	if def != nil {
		dst.Default = def
	}
	if ex != nil {
		dst.Example = ex
	}
}

// object decodes a JSON object, returning its keys in document order.
func object(raw json.RawMessage) ([]string, map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("not an object")
	}
	var keys []string
	m := map[string]json.RawMessage{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := kt.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if _, dup := m[k]; !dup {
			keys = append(keys, k)
		}
		m[k] = v
	}
	return keys, m, nil
}
