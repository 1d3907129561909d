package experiment

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimConfigBuiltOnce: outside tests, one function of the module builds
// a sim.Config (a composite literal of it), Inputs.Resolve: every run,
// simulated or replayed by a fit (Plan.RunOn), takes its engine settings
// from a resolved spec, so no second reading of a spec's fields can drift.
func TestSimConfigBuiltOnce(t *testing.T) {
	got := configLiterals(t, "..")
	if len(got) != 1 || got[0] != "experiment/resolve.go: Resolve" {
		t.Errorf("sim.Config literals in %v, want only in experiment/resolve.go: Resolve", got)
	}
}

// configLiterals lists "file: function" for each sim.Config composite
// literal (Config{...} inside package sim) in the non-test Go files under
// root.
func configLiterals(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				if c, ok := n.(*ast.CompositeLit); ok && isSimConfig(c.Type, f.Name.Name) {
					out = append(out, filepath.ToSlash(rel)+": "+fn.Name.Name)
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// isSimConfig reports whether e names sim.Config (Config within package
// sim), or a slice, array or map of them.
func isSimConfig(e ast.Expr, pkg string) bool {
	switch x := e.(type) {
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == "sim" && x.Sel.Name == "Config"
	case *ast.Ident:
		return pkg == "sim" && x.Name == "Config"
	case *ast.ArrayType: // []sim.Config{{...}}: elements built with the type elided
		return isSimConfig(x.Elt, pkg)
	case *ast.MapType:
		return isSimConfig(x.Value, pkg)
	}
	return false
}

// TestConfigLiteralsFound: the scan finds a sim.Config literal where there
// is one (this test would pass vacuously otherwise).
func TestConfigLiteralsFound(t *testing.T) {
	dir := t.TempDir()
	src := "package x\n\nimport \"github.com/lessim/lessim/sim\"\n\nfunc a() sim.Config { return sim.Config{SpecBlock: 1} }\n\nfunc b() { _ = []sim.Config{{}} }\n"
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := configLiterals(t, dir); strings.Join(got, ", ") != "x.go: a, x.go: b" {
		t.Errorf("found %v, want [x.go: a x.go: b]", got)
	}
}
