package deployment_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/deployment"
)

// ssmPath matches a parameter path of the gateway, not the module path
// (github.com/llmgw/llmgw/...).
var (
	ssmPath = regexp.MustCompile(`^` + regexp.QuoteMeta(deployment.ParameterRoot))
	envName = regexp.MustCompile(`^LLMGW_[A-Z0-9_]*$`)
)

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

// TestNoContractLiteralOutsideThisPackage keeps the contract in one place:
// no Go string literal of non-test code elsewhere in the repository is an
// LLMGW_* variable name or an SSM path of the gateway (/llmgw/...): code
// that reads or sets them uses this package's constants. Prose that
// mentions a name (help texts, messages) is not a definition and is
// allowed. LLMGW_TEST_* variables are test knobs, not part of the
// deployment.
func TestNoContractLiteralOutsideThisPackage(t *testing.T) {
	root := repoRoot(t)
	self := filepath.Join(root, "pkg", "deployment")
	fset := token.NewFileSet()
	var bad []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", ".git", "build", "cdk.out", "testdata":
				return filepath.SkipDir
			}
			if path == self {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		isTest := strings.HasSuffix(path, "_test.go")
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			rel, _ := filepath.Rel(root, fset.Position(lit.Pos()).String())
			if !isTest && envName.MatchString(s) && !strings.HasPrefix(s, "LLMGW_TEST_") {
				bad = append(bad, rel+": "+lit.Value)
			}
			if !isTest && ssmPath.MatchString(s) {
				bad = append(bad, rel+": "+lit.Value)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("contract name spelled outside pkg/deployment (use its constants): %s", b)
	}
}

func TestFunctionEnvironments(t *testing.T) {
	for name, env := range map[string][]string{"gateway": deployment.GatewayEnv(), "rollup": deployment.RollupEnv()} {
		if !slices.Contains(env, deployment.EnvTable) || !slices.Contains(env, deployment.EnvConfigPath) || !slices.Contains(env, deployment.EnvStage) {
			t.Errorf("%s: %v lacks the table, config path or stage", name, env)
		}
		for _, local := range []string{deployment.EnvConfigFile, deployment.EnvKey} {
			if slices.Contains(env, local) {
				t.Errorf("%s: %s is a local override; the stack must not set it", name, local)
			}
		}
		// The gateway sends the records the table did not take to the queue;
		// the rollup drains it: both must know it.
		if !slices.Contains(env, deployment.EnvUsageQueue) {
			t.Errorf("%s: %v lacks the usage spill queue", name, env)
		}
		if len(slices.Compact(slices.Sorted(slices.Values(env)))) != len(env) {
			t.Errorf("%s: duplicate variables in %v", name, env)
		}
	}
	if got := deployment.ConfigPath("prod"); got != "/llmgw/prod/config/" {
		t.Errorf("ConfigPath = %q", got)
	}
	if got := deployment.KeysPath("prod"); got != "/llmgw/prod/keys/" {
		t.Errorf("KeysPath = %q", got)
	}
}

// TestPersistentNamesArePinned: these names are in deployed tables and
// operators' parameters; renaming them orphans existing data (a migration,
// not a refactoring).
func TestPersistentNamesArePinned(t *testing.T) {
	for got, want := range map[string]string{
		deployment.AttrPK: "pk", deployment.AttrSK: "sk", deployment.AttrTTL: "ttl", deployment.AttrVersion: "ver",
		deployment.AttrData: "data", deployment.ConfigPath("s"): "/llmgw/s/config/", deployment.KeysPath("s"): "/llmgw/s/keys/",
		deployment.DefaultTable: "llmgw", deployment.MetricNamespace: "LLMGateway",
	} {
		if got != want {
			t.Errorf("%q renamed to %q", want, got)
		}
	}
}

// TestLeaf keeps the package cheap to link: standard library only.
func TestLeaf(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for name, f := range p.Files {
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if strings.Contains(strings.SplitN(path, "/", 2)[0], ".") {
					t.Errorf("%s imports %s: pkg/deployment must stay standard-library only", name, path)
				}
			}
		}
	}
}

// TestGoRuntimeEnv: the gateway function's Go runtime settings are a GC
// percent whose first collection comes after the cold start, and a soft
// memory limit inside the function's memory.
func TestGoRuntimeEnv(t *testing.T) {
	env := deployment.GoRuntimeEnv(1024)
	if env[deployment.EnvGOGC] != "400" || env[deployment.EnvGOMEMLIMIT] != "768MiB" || len(env) != 2 {
		t.Errorf("GoRuntimeEnv(1024) = %v, want GOGC 400 and GOMEMLIMIT 768MiB", env)
	}
	if got := deployment.GoRuntimeEnv(128)[deployment.EnvGOMEMLIMIT]; got != "96MiB" {
		t.Errorf("GOMEMLIMIT at 128 MB = %q, want 96MiB", got)
	}
}
