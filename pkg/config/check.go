package config

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// errStop ends a check that has looked at too many nodes (an alias bomb):
// the decoder's own error is reported instead.
var errStop = errors.New("config: check budget exhausted")

// checker walks a document against the config's Go types.
type checker struct{ budget int }

// check returns the first problem encoding/json (or yaml.v3) would have
// with node n decoded into a value of type t at path p, in document order.
func (c *checker) check(n *yaml.Node, t reflect.Type, p Path) error {
	if c.budget--; c.budget < 0 {
		return errStop
	}
	n = Deref(n)
	if n == nil {
		return nil
	}
	// null leaves any value as it is, except that encoding/json hands it
	// to a non-pointer Unmarshaler (Duration refuses it).
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" && (t.Kind() == reflect.Pointer || !reflect.PointerTo(t).Implements(unmarshalerType)) {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isLeaf(t) {
		return leaf(n, t, p)
	}
	switch t.Kind() {
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return at(n, p, "expected a list, got %s", describe(n))
		}
		for i, e := range n.Content {
			if err := c.check(e, t.Elem(), p.Index(i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Struct, reflect.Map:
		if n.Kind != yaml.MappingNode {
			if len(p) == 0 {
				return at(n, p, "expected a mapping of sections (%s), got %s", strings.Join(fieldNames(fieldsOf(t)), ", "), describe(n))
			}
			return at(n, p, "expected a mapping, got %s", describe(n))
		}
		if err := checkKeys(n, p); err != nil {
			return err
		}
		for _, e := range pairs(n) {
			var ft reflect.Type
			kp := p.Key(e.k.Value)
			if t.Kind() == reflect.Map {
				ft = t.Elem()
			} else {
				fs := fieldsOf(t)
				f, ok := fieldNamed(fs, e.k.Value)
				if !ok {
					err := at(e.k, kp, "unknown field %s%s", show(e.k.Value), didYouMean(e.k.Value, fieldNames(fs)))
					if !strings.Contains(err.Msg, "did you mean") {
						err.Msg += " (known fields: " + strings.Join(fieldNames(fs), ", ") + ")"
					}
					err.OnKey = true
					return err
				}
				ft, kp = f.typ, p.Key(f.name)
			}
			if err := c.check(e.v, ft, kp); err != nil {
				return err
			}
		}
		return nil
	}
	return nil
}

// checkKeys checks a mapping's own keys: strings, each given once, and
// merges of mappings only.
func checkKeys(m *yaml.Node, p Path) error {
	first := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if tag := k.ShortTag(); tag != "!!str" && tag != "!!merge" {
			if k.Kind == yaml.ScalarNode {
				e := at(k, p.Key(k.Value), "the key %s is not a string: quote it (%q)", describe(k), k.Value)
				e.OnKey = true
				return e
			}
			return at(k, p, "a key must be a string, got %s", describe(k))
		}
		id := string(rune(k.Kind)) + k.Value
		if line, dup := first[id]; dup {
			e := at(k, p.Key(k.Value), "key %s is given twice (first at line %d)", show(k.Value), line)
			e.OnKey = true
			return e
		}
		first[id] = k.Line
		if isMerge(k) {
			ok := false
			switch r := Deref(v); {
			case r == nil:
			case r.Kind == yaml.MappingNode:
				ok = true
			case r.Kind == yaml.SequenceNode && v.Kind != yaml.AliasNode:
				ok = true
				for _, e := range r.Content {
					if re := Deref(e); re == nil || re.Kind != yaml.MappingNode {
						ok = false
					}
				}
			}
			if !ok {
				return at(v, p, "a << merge takes a mapping or a list of mappings, got %s", describe(Deref(v)))
			}
		}
	}
	return nil
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	durationType    = reflect.TypeFor[Duration]()
)

// isLeaf reports types decoded from one scalar.
func isLeaf(t reflect.Type) bool {
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return true
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array, reflect.Pointer, reflect.Interface:
		return false
	}
	return true
}

// leaf decodes one value the way the whole document is decoded, and
// explains a failure in the config's terms.
func leaf(n *yaml.Node, t reflect.Type, p Path) error {
	var v any
	if err := n.Decode(&v); err != nil {
		return at(n, p, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	js, err := json.Marshal(v)
	if err == nil {
		if err = json.Unmarshal(js, reflect.New(t).Interface()); err == nil {
			return nil
		}
	}
	if t == durationType {
		return durationError(n, p)
	}
	want := "a " + t.Kind().String()
	switch t.Kind() {
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "an integer"
		if tag := n.ShortTag(); tag == "!!int" || tag == "!!float" && !strings.ContainsAny(n.Value, ".nN") {
			return at(n, p, "expected an integer, got %s, which is out of range", describe(n))
		}
	case reflect.Float32, reflect.Float64:
		want = "a number"
		if n.ShortTag() == "!!float" {
			return at(n, p, "expected a finite number, got %s", describe(n))
		}
	}
	return at(n, p, "expected %s, got %s", want, describe(n))
}

// durationError explains a value that is not a Duration.
func durationError(n *yaml.Node, p Path) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return at(n, p, "expected a duration like \"10s\" or \"250ms\", got %s", describe(n))
	}
	var d Duration
	js, _ := json.Marshal(n.Value)
	err := d.UnmarshalJSON(js)
	if err != nil && strings.Contains(err.Error(), "negative") {
		return at(n, p, "duration %s must not be negative", show(n.Value))
	}
	return at(n, p, "%s is not a duration%s; write it like \"10s\", \"1.5s\" or \"250ms\"", show(n.Value), durationReason(n.Value))
}

// durationReason is time.ParseDuration's complaint, shortened.
func durationReason(s string) string {
	_, err := time.ParseDuration(s)
	if err == nil {
		return ""
	}
	r := strings.TrimPrefix(err.Error(), "time: ")
	if i := strings.Index(r, " in duration "); i >= 0 {
		r = r[:i]
	}
	if strings.HasPrefix(r, "invalid duration") {
		return ""
	}
	return " (" + r + ")"
}

// at makes an *Error at node n.
func at(n *yaml.Node, p Path, format string, args ...any) *Error {
	e := errAt(p, format, args...)
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

// describe says what a node is, for "got ..." in messages.
func describe(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch tag := n.ShortTag(); tag {
	case "!!str":
		return "string " + show(n.Value)
	case "!!int":
		return "integer " + n.Value
	case "!!float":
		return "number " + n.Value
	case "!!bool":
		return "boolean " + n.Value
	case "!!null":
		return "null"
	case "!!timestamp":
		return "timestamp " + n.Value
	default:
		return tag + " " + show(n.Value)
	}
}
