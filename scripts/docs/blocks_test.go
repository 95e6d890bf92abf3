package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// block is one fenced block of a document.
type block struct {
	file   string // path relative to the repository root
	line   int    // the line of its opening fence
	lang   string // the fence's info string ("sh", "yaml", ...)
	marker string // the HTML comment on the line before the fence, if any
	text   string // the content, the fence's indentation removed
}

var fence = regexp.MustCompile("^( *)(```+)(.*)$")

// readBlocks returns the fenced blocks of one document.
func readBlocks(t *testing.T, repo, file string) ([]block, []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, file))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []block
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		bl := block{file: file, line: i + 1, lang: strings.TrimSpace(m[3])}
		for p := i - 1; p >= 0; p-- {
			if t := strings.TrimSpace(lines[p]); t != "" {
				if strings.HasPrefix(t, "<!--") {
					bl.marker = t
				}
				break
			}
		}
		var text []string
		j := i + 1
		for ; j < len(lines); j++ {
			if strings.TrimSpace(lines[j]) == m[2] {
				break
			}
			text = append(text, strings.TrimPrefix(lines[j], m[1]))
		}
		if j == len(lines) {
			t.Errorf("%s:%d: the block never ends", file, i+1)
		}
		bl.text = strings.Join(text, "\n") + "\n"
		out = append(out, bl)
		i = j
	}
	return out, lines
}

// documents lists README.md and docs/*.md, relative to the repository.
func documents(t *testing.T, repo string) []string {
	t.Helper()
	files := []string{"README.md"}
	m, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range m {
		files = append(files, filepath.Join("docs", filepath.Base(f)))
	}
	return files
}

func repoRoot(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReadBlocks(t *testing.T) {
	dir := t.TempDir()
	doc := "# t\n\n<!-- fragment -->\n```yaml\na: 1\n```\n\n- item\n\n  ```sh\n  echo hi\n  ```\n"
	if err := os.WriteFile(filepath.Join(dir, "x.md"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	bs, _ := readBlocks(t, dir, "x.md")
	if len(bs) != 2 || bs[0].lang != "yaml" || bs[0].marker != "<!-- fragment -->" || bs[0].text != "a: 1\n" ||
		bs[0].line != 4 || bs[1].lang != "sh" || bs[1].text != "echo hi\n" || bs[1].marker != "" {
		t.Fatalf("%+v", bs)
	}
}
