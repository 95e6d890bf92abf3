package docs

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/llmgw/llmgw/pkg/config"
	_ "github.com/llmgw/llmgw/pkg/provider/registry" // every provider kind, as the gateway loads them
	"github.com/llmgw/llmgw/pkg/ssmconfig"
)

// docBase is what a documented config block is merged over: the providers
// and routes the documents name without declaring them in every block.
const docBase = `
providers:
  openai: {kind: openai, base_url: "https://api.openai.com/v1", keys: [{env: OPENAI_API_KEY}]}
  anthropic: {kind: anthropic, base_url: "https://api.anthropic.com", keys: [{env: ANTHROPIC_API_KEY}]}
  bedrock: {kind: bedrock, region: us-east-1}
  google: {kind: gemini, keys: [{env: GEMINI_API_KEY}]}
  groq: {kind: openai, base_url: "https://api.groq.com/openai/v1", keys: [{env: GROQ_API_KEY}]}
routes:
  gpt-4.1-mini: {targets: [{provider: openai, model: gpt-4.1-mini}]}
`

// pending are documents the README's index links that other work adds;
// a link to one is not checked until it exists.
var pending = []string{"docs/bedrock-clients.md", "docs/claude-on-bedrock.md", "docs/security.md",
	"docs/observability.md", "docs/guardrails.md", "docs/responses.md"}

// TestDocBlocks checks every fenced block and link of the README and
// docs/*.md (see the package doc).
func TestDocBlocks(t *testing.T) {
	repo := repoRoot(t)
	var all []block
	lines := map[string][]string{}
	for _, f := range documents(t, repo) {
		bs, ls := readBlocks(t, repo, f)
		all = append(all, bs...)
		lines[f] = ls
	}
	t.Run("yaml", func(t *testing.T) {
		for _, b := range all {
			if b.lang != "yaml" {
				continue
			}
			checkYAML(t, b)
		}
	})
	t.Run("sh", func(t *testing.T) { checkShell(t, repo, all) })
	t.Run("python", func(t *testing.T) {
		checkWith(t, all, "python", "python3", "-c", "import ast,sys; ast.parse(sys.stdin.read())")
	})
	t.Run("js", func(t *testing.T) { checkJS(t, all) })
	t.Run("links", func(t *testing.T) {
		for f, ls := range lines {
			checkLinks(t, repo, f, ls)
		}
	})
}

// checkYAML loads a yaml block with the config loader (a fragment: parses
// it as YAML only). Errors are reported at the document's line.
func checkYAML(t *testing.T, b block) {
	t.Helper()
	at := func(err error) string {
		var ce *config.Error
		if e, ok := err.(*config.Error); ok {
			ce = e
		}
		if ce != nil && ce.Line > 0 {
			return fmt.Sprintf("%s:%d", b.file, b.line+ce.Line)
		}
		return fmt.Sprintf("%s:%d", b.file, b.line)
	}
	var doc any
	if err := yaml.Unmarshal([]byte(b.text), &doc); err != nil {
		t.Errorf("%s: not YAML: %v", at(err), err)
		return
	}
	if b.marker == "<!-- fragment -->" {
		return
	}
	if _, err := config.Parse([]byte(b.text)); err == nil {
		return
	}
	merged, err := ssmconfig.Merge([]string{docBase, b.text})
	if err != nil {
		t.Errorf("%s: %v", at(err), err)
		return
	}
	if _, err := config.Parse(merged); err != nil {
		// The merged document's lines are not the block's: name the block.
		t.Errorf("%s:%d: the config block does not load over the documents' base providers (mark a deliberate fragment <!-- fragment -->): %v", b.file, b.line, err)
	}
}

// shellCommand is one command of a sh block: its words (quotes kept,
// comments dropped) and its line.
type shellCommand struct {
	file  string
	line  int
	words []string
}

func commands(b block) []shellCommand {
	var out []shellCommand
	ls := strings.Split(b.text, "\n")
	for i := 0; i < len(ls); i++ {
		l := strings.TrimSpace(ls[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		c := shellCommand{file: b.file, line: b.line + 1 + i}
		for strings.HasSuffix(l, `\`) && i+1 < len(ls) {
			i++
			l = strings.TrimSuffix(l, `\`) + " " + strings.TrimSpace(ls[i])
		}
		if k := strings.Index(l, " #"); k >= 0 {
			l = l[:k]
		}
		c.words = strings.Fields(l)
		out = append(out, c)
	}
	return out
}

var scriptPath = regexp.MustCompile(`^(\./)?scripts/[A-Za-z0-9_/.-]+\.sh$`)

// checkShell: scripts and ./paths named exist; the flags given to a
// `go run ./X` command are ones X's -h lists.
func checkShell(t *testing.T, repo string, all []block) {
	flags := map[string][]shellCommand{} // ./X -> the commands running it
	for _, b := range all {
		if b.lang != "sh" {
			continue
		}
		for _, c := range commands(b) {
			for i, w := range c.words {
				w = strings.Trim(w, `"'();`)
				switch {
				case scriptPath.MatchString(w):
					if _, err := os.Stat(filepath.Join(repo, w)); err != nil {
						t.Errorf("%s:%d: no script %s", c.file, c.line, w)
					}
				case strings.HasPrefix(w, "./") && i > 0 && (c.words[i-1] == "run" || c.words[i-1] == "test" || strings.HasPrefix(c.words[i-1], "-")):
					p := strings.TrimSuffix(w, "/...")
					if _, err := os.Stat(filepath.Join(repo, p)); err != nil {
						t.Errorf("%s:%d: no %s", c.file, c.line, w)
					}
					if c.words[i-1] == "run" {
						flags[p] = append(flags[p], shellCommand{c.file, c.line, c.words[i+1:]})
					}
				}
			}
		}
	}
	if len(flags) == 0 {
		t.Fatal("no go run command found: the extraction is broken")
	}
	bin := t.TempDir()
	var pkgs []string
	for p := range flags {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	build := exec.Command("go", append([]string{"build", "-o", bin + string(os.PathSeparator)}, pkgs...)...)
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", pkgs, err, out)
	}
	for _, p := range pkgs {
		help, err := exec.Command(filepath.Join(bin, filepath.Base(p)), "-h").CombinedOutput()
		if err != nil {
			t.Errorf("%s -h: %v\n%s", p, err, help)
			continue
		}
		for _, c := range flags[p] {
			for _, w := range c.words {
				if w == "|" || w == "&&" || w == ";" || w == "&" || strings.HasPrefix(w, ">") {
					break
				}
				name, _, _ := strings.Cut(w, "=")
				if strings.HasPrefix(name, "-") && name != "-h" && !bytes.Contains(help, []byte(name+" ")) && !bytes.Contains(help, []byte(name+"\n")) {
					t.Errorf("%s:%d: go run %s %s: its -h lists no such flag", c.file, c.line, p, name)
				}
			}
		}
	}
}

// checkWith pipes every block of lang to a checker command.
func checkWith(t *testing.T, all []block, lang, tool string, args ...string) {
	if _, err := exec.LookPath(tool); err != nil {
		t.Skipf("%s not installed: %s blocks not checked", tool, lang)
	}
	for _, b := range all {
		if b.lang != lang {
			continue
		}
		cmd := exec.Command(tool, args...)
		cmd.Stdin = strings.NewReader(b.text)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s:%d: the %s block does not parse: %v\n%s", b.file, b.line, lang, err, out)
		}
	}
}

// checkJS runs node --check on every js block, as an ES module.
func checkJS(t *testing.T, all []block) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed: js blocks not checked")
	}
	dir := t.TempDir()
	for i, b := range all {
		if b.lang != "js" {
			continue
		}
		f := filepath.Join(dir, fmt.Sprintf("b%d.mjs", i))
		if err := os.WriteFile(f, []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("node", "--check", f).CombinedOutput(); err != nil {
			t.Errorf("%s:%d: the js block does not parse: %v\n%s", b.file, b.line, err, out)
		}
	}
}

var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// checkLinks: every relative link of a document names a file that exists
// (or a pending one), and its #anchor a heading of that file.
func checkLinks(t *testing.T, repo, file string, lines []string) {
	inFence := false
	for i, l := range lines {
		if fence.MatchString(l) {
			inFence = !inFence
		}
		if inFence {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(l, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			rel := file
			if path != "" {
				rel = filepath.Join(filepath.Dir(file), path)
			}
			if _, err := os.Stat(filepath.Join(repo, rel)); err != nil {
				if !slices.Contains(pending, filepath.ToSlash(rel)) {
					t.Errorf("%s:%d: link to %s: no such file", file, i+1, target)
				}
				continue
			}
			if anchor != "" && strings.HasSuffix(rel, ".md") && !slices.Contains(anchors(t, repo, rel), anchor) {
				t.Errorf("%s:%d: link to %s: %s has no heading with anchor #%s", file, i+1, target, rel, anchor)
			}
		}
	}
}

// anchors returns the GitHub anchors of a Markdown file's headings.
func anchors(t *testing.T, repo, rel string) []string {
	b, err := os.ReadFile(filepath.Join(repo, rel))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	seen := map[string]int{}
	inFence := false
	for _, l := range strings.Split(string(b), "\n") {
		if fence.MatchString(l) {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(l, "#") {
			continue
		}
		a := slug(strings.TrimLeft(l, "#"))
		if n := seen[a]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}

// slug is GitHub's heading anchor: lower case, spaces to hyphens, every
// character but letters, digits, hyphens and underscores dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		" Point Claude Code at the gateway":                 "point-claude-code-at-the-gateway",
		" Ingress: OpenAI Responses (`POST /v1/responses`)": "ingress-openai-responses-post-v1responses",
		" Guarantees, and the tests that prove them":        "guarantees-and-the-tests-that-prove-them",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}

// TestDynaliteSnippetWaitsForDynalite runs docs/operations.md's dynalite
// block as written (from the repository root, on free ports, with the
// gateway built once): dynalite starts, the block waits until it listens,
// and the gateway then starts on it and serves. Without the wait the
// gateway starts first and fails with "connection refused".
func TestDynaliteSnippetWaitsForDynalite(t *testing.T) {
	repo := repoRoot(t)
	if _, err := os.Stat(filepath.Join(repo, "node_modules", "dynalite")); err != nil {
		t.Skip("dynalite is not installed (npm ci)")
	}
	var text string
	bs, _ := readBlocks(t, repo, "docs/operations.md")
	for _, b := range bs {
		if b.lang == "sh" && strings.Contains(b.text, "npx dynalite") {
			text = b.text
		}
	}
	if text == "" {
		t.Fatal("docs/operations.md has no dynalite block")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin, "./functions/gateway")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	dbPort, gwPort := freePort(t), freePort(t)
	script := strings.ReplaceAll(text, "8000", strconv.Itoa(dbPort))
	script = strings.ReplaceAll(script, "go run ./functions/gateway -store dynamodb",
		filepath.Join(bin, "gateway")+" -store dynamodb -table docs-"+strconv.Itoa(dbPort)+" -addr 127.0.0.1:"+strconv.Itoa(gwPort))
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = repo
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A file, not a pipe: Wait returns when bash exits even while dynalite,
	// in the background, still holds its output.
	out, err := os.CreateTemp(t.TempDir(), "block.log")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) // the block's own process group only
		<-done
	}()
	url := "http://127.0.0.1:" + strconv.Itoa(gwPort) + "/healthz"
	for {
		select {
		case err := <-done:
			done <- err
			b, _ := os.ReadFile(out.Name())
			t.Fatalf("the block ended before the gateway served: %v\n%s", err, b)
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("healthz %d", resp.StatusCode)
			}
			return
		}
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
