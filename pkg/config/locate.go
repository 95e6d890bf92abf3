package config

import (
	"reflect"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// The document is decoded as before (YAML to generic values, to JSON,
// decoded strictly), so what is accepted and what it means does not
// change. Only when that fails is the document read again as a yaml.Node
// tree, to say where and why: check walks the tree against the Go types
// the way encoding/json would, and Locate finds the line and column of a
// validation error's path.

// field is one JSON field of a struct, as encoding/json sees it.
type field struct {
	name string
	typ  reflect.Type
}

var fieldCache sync.Map // reflect.Type -> []field

// fieldsOf returns the JSON fields of struct type t, with untagged
// embedded structs (Route's Policy) inlined.
func fieldsOf(t reflect.Type) []field {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]field)
	}
	var fs []field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		ft := sf.Type
		if sf.Anonymous && tag == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				fs = append(fs, fieldsOf(ft)...)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if tag == "" {
			tag = sf.Name
		}
		fs = append(fs, field{tag, ft})
	}
	fieldCache.Store(t, fs)
	return fs
}

// fieldNamed finds the field a key sets: an exact match, else one equal
// under case folding (encoding/json's rule).
func fieldNamed(fs []field, key string) (field, bool) {
	for _, f := range fs {
		if f.name == key {
			return f, true
		}
	}
	for _, f := range fs {
		if strings.EqualFold(f.name, key) {
			return f, true
		}
	}
	return field{}, false
}

func fieldNames(fs []field) []string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return names
}

// Deref follows aliases and unwraps a document node: the node that holds
// the value, for code that walks a YAML tree (locating errors here and in
// pkg/ssmconfig). nil when there is none.
func Deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && i < 64; i++ {
		switch {
		case n.Kind == yaml.AliasNode:
			n = n.Alias
		case n.Kind == yaml.DocumentNode && len(n.Content) > 0:
			n = n.Content[0]
		case n.Kind == yaml.DocumentNode:
			return nil
		default:
			return n
		}
	}
	return nil
}

// isMerge is yaml.v3's test for a "<<" merge key.
func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.Tag == "!!merge" || k.Tag == "tag:yaml.org,2002:merge")
}

// pair is a key and its value in a mapping.
type pair struct{ k, v *yaml.Node }

// pairs returns the effective entries of a mapping, as yaml.v3 decodes
// them: its own entries, then those of its "<<" merges that it does not
// set itself (earlier merges win over later ones).
func pairs(m *yaml.Node) []pair {
	var out []pair
	seen := map[string]bool{}
	var add func(m *yaml.Node, depth int)
	add = func(m *yaml.Node, depth int) {
		m = Deref(m)
		if m == nil || m.Kind != yaml.MappingNode || depth > 16 {
			return
		}
		var merges []*yaml.Node
		for i := 0; i+1 < len(m.Content); i += 2 {
			k := m.Content[i]
			if isMerge(k) {
				merges = append(merges, m.Content[i+1])
				continue
			}
			if !seen[k.Value] {
				seen[k.Value] = true
				out = append(out, pair{k, m.Content[i+1]})
			}
		}
		for _, mv := range merges {
			if r := Deref(mv); r != nil && r.Kind == yaml.SequenceNode {
				for _, e := range r.Content {
					add(e, depth+1)
				}
			} else {
				add(mv, depth+1)
			}
		}
	}
	add(m, 0)
	return out
}

// Locate finds path p in a config document parsed into root (a
// yaml.Node from yaml.Unmarshal). It returns the key and value nodes of
// the longest prefix of p present in the document and that prefix's
// length: n == len(p) when p itself is there. key is nil for the
// document and for list elements.
func Locate(root *yaml.Node, p Path) (key, value *yaml.Node, n int) {
	value = Deref(root)
	t := reflect.TypeOf(Config{})
	for n < len(p) && value != nil {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		var k, v *yaml.Node
		var next reflect.Type
		switch {
		case value.Kind == yaml.SequenceNode:
			if i := index(p[n]); i >= 0 && i < len(value.Content) {
				v = value.Content[i]
				if t != nil && t.Kind() == reflect.Slice {
					next = t.Elem()
				}
			}
		case value.Kind == yaml.MappingNode:
			ps := pairs(value)
			for _, e := range ps {
				if e.k.Value == p[n] {
					k, v = e.k, e.v
					break
				}
			}
			if t != nil && t.Kind() == reflect.Struct {
				fs := fieldsOf(t)
				if f, ok := fieldNamed(fs, p[n]); ok {
					next = f.typ
					for _, e := range ps { // a key in other case sets the field too
						if k == nil && strings.EqualFold(e.k.Value, p[n]) {
							k, v = e.k, e.v
						}
					}
				}
			} else if t != nil && t.Kind() == reflect.Map {
				next = t.Elem()
			}
		}
		if v == nil {
			break
		}
		key, value, t = k, Deref(v), next
		n++
	}
	return key, value, n
}

// position sets e's line and column from the document: the node at its
// path, else the nearest enclosing one.
func (e *Error) position(root *yaml.Node) {
	k, v, n := Locate(root, e.Path)
	if n == 0 {
		return // only the document itself: no useful position
	}
	node := v
	if e.OnKey && k != nil && n == len(e.Path) || node == nil {
		node = k
	}
	if node != nil {
		e.Line, e.Column = node.Line, node.Column
	}
}
