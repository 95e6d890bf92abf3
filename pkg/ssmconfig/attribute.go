package ssmconfig

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/llmgw/llmgw/pkg/config"
)

// A config error of the merged document names a path (teams.search.keys
// [0].sha256). The operator edits parameters, not the merged document, so
// the error is re-located: the parameters are merged again as node trees,
// the same way (maps merge key by key, anything else is replaced), keeping
// each node of each parameter, so the node at the error's path tells
// which parameter set it and where in its value.

// param is one config parameter as read from SSM: its name, its YAML
// value, its type and version (recorded with the last good config).
type param struct {
	name, value, typ string
	version          int64
}

// mergeParams is Merge, naming the parameter a document error is in.
func mergeParams(params []param) ([]byte, error) {
	var acc map[string]any
	for _, p := range params {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(p.value), &m); err != nil {
			// Parse explains it: line, column, what is wrong.
			var ce *config.Error
			if _, perr := config.Parse([]byte(p.value)); errors.As(perr, &ce) {
				ce.Source = "parameter " + p.name
				return nil, ce
			}
			return nil, fmt.Errorf("config parameter %s: %w", p.name, err)
		}
		acc = mergeMaps(acc, m)
	}
	return yaml.Marshal(acc)
}

// attribute re-locates err, an error of the merged document, in the
// parameter that holds the offending value: Source names it, Line and
// Column are within its value. A value no parameter holds (a required
// field is missing) is attributed to all of them.
func attribute(err error, params []param, path string) error {
	var ce *config.Error
	if !errors.As(err, &ce) {
		return err
	}
	out := *ce
	out.Source, out.Line, out.Column = "parameters under "+path, 0, 0
	root, origin := mergeNodes(params)
	k, v, n := config.Locate(root, ce.Path)
	node := v
	if ce.OnKey && k != nil && n == len(ce.Path) || node == nil {
		node = k
	}
	if i, ok := origin[node]; ok && n > 0 {
		out.Source = "parameter " + params[i].name
		out.Line, out.Column = node.Line, node.Column
	}
	return &out
}

// mergeNodes merges the parameters' documents as Merge does, into a tree
// made of their own nodes; origin maps each node to its parameter. A
// mapping merged from several parameters is a new node, attributed to the
// last of them.
func mergeNodes(params []param) (*yaml.Node, map[*yaml.Node]int) {
	origin := map[*yaml.Node]int{}
	var acc *yaml.Node
	for i, p := range params {
		var doc yaml.Node
		if yaml.Unmarshal([]byte(p.value), &doc) != nil {
			continue
		}
		mark(&doc, i, origin, 0)
		if root := config.Deref(&doc); root != nil && root.Kind == yaml.MappingNode {
			acc = mergeNode(acc, root, origin)
		}
	}
	return acc, origin
}

func mark(n *yaml.Node, i int, origin map[*yaml.Node]int, depth int) {
	if n == nil || depth > 1000 {
		return
	}
	origin[n] = i
	for _, c := range n.Content {
		mark(c, i, origin, depth+1)
	}
}

// mergeNode is mergeMaps on nodes: two string-keyed mappings merge, else
// src replaces dst.
func mergeNode(dst, src *yaml.Node, origin map[*yaml.Node]int) *yaml.Node {
	d, s := config.Deref(dst), config.Deref(src)
	if !stringMap(d) || !stringMap(s) {
		return src
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: s.Line, Column: s.Column}
	origin[m] = origin[s]
	at := map[string]int{}
	for _, e := range entries(d, 0) {
		at[e[0].Value] = len(m.Content)
		m.Content = append(m.Content, e[0], e[1])
	}
	for _, e := range entries(s, 0) {
		if j, ok := at[e[0].Value]; ok {
			m.Content[j], m.Content[j+1] = e[0], mergeNode(m.Content[j+1], e[1], origin)
			continue
		}
		at[e[0].Value] = len(m.Content)
		m.Content = append(m.Content, e[0], e[1])
	}
	return m
}

// stringMap reports a mapping that yaml.v3 decodes as map[string]any
// (what mergeMaps merges).
func stringMap(n *yaml.Node) bool {
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i < len(n.Content); i += 2 {
		if t := n.Content[i].ShortTag(); t != "!!str" && t != "!!merge" {
			return false
		}
	}
	return true
}

// entries are a mapping's effective key/value pairs as yaml.v3 decodes
// them: its own, then those of its << merges it does not set itself.
func entries(m *yaml.Node, depth int) [][2]*yaml.Node {
	m = config.Deref(m)
	if m == nil || m.Kind != yaml.MappingNode || depth > 16 {
		return nil
	}
	var out [][2]*yaml.Node
	seen := map[string]bool{}
	add := func(k, v *yaml.Node) {
		if !seen[k.Value] {
			seen[k.Value] = true
			out = append(out, [2]*yaml.Node{k, v})
		}
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge" {
			merges = append(merges, m.Content[i+1])
		} else {
			add(k, m.Content[i+1])
		}
	}
	for _, mv := range merges {
		srcs := []*yaml.Node{mv}
		if r := config.Deref(mv); r != nil && r.Kind == yaml.SequenceNode {
			srcs = r.Content
		}
		for _, src := range srcs {
			for _, e := range entries(src, depth+1) {
				add(e[0], e[1])
			}
		}
	}
	return out
}
