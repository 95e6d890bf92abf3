package gwstack

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v2"
)

// MaxParameterBytes is the largest value a standard-tier SSM parameter holds.
const MaxParameterBytes = 4096

// ConfigChunk is one SSM parameter of the seeded gateway configuration.
type ConfigChunk struct {
	// Name is the last path segment of the parameter, e.g. "00-base".
	Name string
	// Value is a self-contained YAML mapping document.
	Value string
}

var (
	stageToken = regexp.MustCompile(`\bSTAGE\b`)
	// topKey matches a line that starts a mapping entry at its own indentation
	// (a plain or quoted key followed by a colon).
	keyLine = regexp.MustCompile(`^( *)([A-Za-z0-9_.\-/]+|"[^"]*"|'[^']*') *:( |$)`)
)

// RenderSeedConfig replaces the STAGE token in the seed configuration and
// drops the leading comment block (documentation for humans, not worth SSM
// bytes).
func RenderSeedConfig(raw []byte, stage string) string {
	text := strings.ReplaceAll(string(raw), "\r\n", "\n")
	text = stageToken.ReplaceAllString(text, stage)
	lines := strings.SplitAfter(text, "\n")
	i := 0
	for i < len(lines) {
		t := strings.TrimSpace(lines[i])
		if t != "" && !strings.HasPrefix(t, "#") {
			break
		}
		i++
	}
	return strings.Join(lines[i:], "")
}

// SplitConfig splits a rendered YAML configuration into parameters of at most
// maxBytes each. The contract with the gateway: read every parameter under
// the config path, sort by name, parse each as a YAML mapping and deep-merge
// the mappings in that order (later values win for scalars). A document that
// fits is returned as the single chunk "00-base". A larger one is split at
// top-level keys (chunks "00-base", "00-base-01", ...); a top-level section
// that alone exceeds the limit is split again at its second-level keys, each
// piece repeating the section header, which deep-merging reassembles.
//
// SplitConfig verifies that merging the chunks gives back exactly the parsed
// input and returns an error otherwise.
func SplitConfig(text string, maxBytes int) ([]ConfigChunk, error) {
	var whole map[interface{}]interface{}
	if err := yaml.Unmarshal([]byte(text), &whole); err != nil {
		return nil, fmt.Errorf("seed config is not valid YAML: %w", err)
	}
	if whole == nil {
		return nil, fmt.Errorf("seed config is empty")
	}
	var values []string
	if len(text) <= maxBytes {
		values = []string{text}
	} else {
		var err error
		values, err = splitLarge(text, maxBytes)
		if err != nil {
			return nil, err
		}
	}
	chunks := make([]ConfigChunk, len(values))
	merged := map[interface{}]interface{}{}
	for i, v := range values {
		name := "00-base"
		if i > 0 {
			name = fmt.Sprintf("00-base-%02d", i)
		}
		chunks[i] = ConfigChunk{Name: name, Value: v}
		var m map[interface{}]interface{}
		if err := yaml.Unmarshal([]byte(v), &m); err != nil {
			return nil, fmt.Errorf("seed config chunk %s is not valid YAML (split at an unexpected place): %w", name, err)
		}
		deepMerge(merged, m)
	}
	if !reflect.DeepEqual(merged, whole) {
		return nil, fmt.Errorf("seed config chunks do not merge back into the original document; simplify the YAML layout (block style mappings at the top two levels)")
	}
	return chunks, nil
}

// block is a run of lines that starts with a mapping key line.
type block struct {
	key   string
	lines []string
}

func (b block) text() string { return strings.Join(b.lines, "") }

// splitBlocks cuts lines into blocks starting at key lines of the given
// indentation; lines before the first key (comments) join the first block.
func splitBlocks(lines []string, indent int) []block {
	var out []block
	var pre []string
	for _, l := range lines {
		m := keyLine.FindStringSubmatch(strings.TrimRight(l, "\n"))
		if m != nil && len(m[1]) == indent {
			nb := block{key: m[2], lines: append(pre, l)}
			pre = nil
			out = append(out, nb)
			continue
		}
		if len(out) == 0 {
			pre = append(pre, l)
			continue
		}
		out[len(out)-1].lines = append(out[len(out)-1].lines, l)
	}
	if len(pre) > 0 {
		if len(out) == 0 {
			return []block{{lines: pre}}
		}
		out[0].lines = append(pre, out[0].lines...)
	}
	return out
}

func splitLarge(text string, maxBytes int) ([]string, error) {
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	top := splitBlocks(strings.SplitAfter(text, "\n"), 0)
	var pieces []string
	for _, b := range top {
		if len(b.text()) <= maxBytes {
			pieces = append(pieces, b.text())
			continue
		}
		sub, err := splitSection(b, maxBytes)
		if err != nil {
			return nil, err
		}
		pieces = append(pieces, sub...)
	}
	return pack(pieces, maxBytes), nil
}

// splitSection splits one oversized top-level section at its second-level
// keys, repeating the section header line in every piece.
func splitSection(b block, maxBytes int) ([]string, error) {
	header, body := b.lines[0], b.lines[1:]
	if strings.TrimSpace(strings.SplitN(header, ":", 2)[1]) != "" {
		return nil, fmt.Errorf("seed config section %q is larger than %d bytes and is not a block mapping; it cannot be split", b.key, maxBytes)
	}
	indent := -1
	for _, l := range body {
		if m := keyLine.FindStringSubmatch(strings.TrimRight(l, "\n")); m != nil {
			indent = len(m[1])
			break
		}
	}
	if indent <= 0 {
		return nil, fmt.Errorf("seed config section %q is larger than %d bytes and has no nested keys to split at", b.key, maxBytes)
	}
	var parts []string
	for _, sb := range splitBlocks(body, indent) {
		if len(header)+len(sb.text()) > maxBytes {
			return nil, fmt.Errorf("seed config entry %s.%s is larger than %d bytes; shorten it or move it to its own parameter", b.key, sb.key, maxBytes)
		}
		parts = append(parts, sb.text())
	}
	var out []string
	cur := header
	for _, p := range parts {
		if len(cur)+len(p) > maxBytes {
			out = append(out, cur)
			cur = header
		}
		cur += p
	}
	return append(out, cur), nil
}

// pack concatenates consecutive pieces greedily while they fit.
func pack(pieces []string, maxBytes int) []string {
	var out []string
	var cur bytes.Buffer
	for _, p := range pieces {
		if cur.Len() > 0 && cur.Len()+len(p) > maxBytes {
			out = append(out, cur.String())
			cur.Reset()
		}
		cur.WriteString(p)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

func deepMerge(dst, src map[interface{}]interface{}) {
	for k, v := range src {
		sm, sok := v.(map[interface{}]interface{})
		dm, dok := dst[k].(map[interface{}]interface{})
		if sok && dok {
			deepMerge(dm, sm)
			continue
		}
		dst[k] = v
	}
}

// BedrockRegions returns the sorted, distinct regions of the providers of
// kind "bedrock" in a rendered configuration, so the stack can grant Bedrock
// access in exactly those regions.
func BedrockRegions(text string) ([]string, error) {
	var cfg struct {
		Providers map[string]struct {
			Kind   string `yaml:"kind"`
			Region string `yaml:"region"`
		} `yaml:"providers"`
	}
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		return nil, fmt.Errorf("seed config is not valid YAML: %w", err)
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range cfg.Providers {
		if p.Kind == "bedrock" && p.Region != "" && !seen[p.Region] {
			seen[p.Region] = true
			out = append(out, p.Region)
		}
	}
	sort.Strings(out)
	return out, nil
}
