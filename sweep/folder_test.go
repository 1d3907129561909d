package sweep

import (
	"context"
	"github.com/lessim/lessim/internal/errgolden"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runFile runs the sweep file at path into out, as lessim sweep does.
func runFile(t *testing.T, path, out string) (*Summary, error) {
	t.Helper()
	g, err := ReadGrid(path)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := g.ResolvedConfig(pts, "test")
	if err != nil {
		t.Fatal(err)
	}
	return Run(context.Background(), g.Name, pts, Options{Out: out, Version: "test", Config: cfg, ConfigPath: path})
}

// TestConfigInsideOutIsNotOverwritten: a sweep file that is the sweep.yaml
// of the new folder --out names (by path, symlink or hard link) is refused
// and left as it was; a results folder's own sweep.yaml still runs into a
// new folder and resumes its own folder (which does not rewrite it).
func TestConfigInsideOutIsNotOverwritten(t *testing.T) {
	tmp := t.TempDir()
	src := []byte(testGrid + "# my notes\n")
	cl := filepath.Join(tmp, "cl")
	os.Mkdir(cl, 0o755)
	own := filepath.Join(cl, ConfigFile)
	os.WriteFile(own, src, 0o644)
	sym, hard := filepath.Join(tmp, "sym.yaml"), filepath.Join(tmp, "hard.yaml")
	if err := os.Symlink(own, sym); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(own, hard); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []string{own, sym, hard} {
		_, err := runFile(t, cfg, cl)
		errgolden.Check(t, filepath.Base(cfg), err)
		if got, _ := os.ReadFile(own); string(got) != string(src) {
			t.Fatalf("--config %s: the sweep file was overwritten:\n%s", cfg, got)
		}
	}
	if _, err := os.Stat(filepath.Join(cl, ManifestFile)); !os.IsNotExist(err) {
		t.Errorf("a refused run wrote the manifest (stat: %v)", err)
	}
	res := filepath.Join(tmp, "results")
	if _, err := runFile(t, hard, res); err != nil {
		t.Fatal(err)
	}
	resYAML := filepath.Join(res, ConfigFile)
	before, _ := os.ReadFile(resYAML)
	if _, err := runFile(t, resYAML, filepath.Join(tmp, "again")); err != nil {
		t.Errorf("results/sweep.yaml into a new folder: %v", err)
	}
	sum, err := runFile(t, resYAML, res)
	if err != nil || sum.Skipped != 12 {
		t.Errorf("results/sweep.yaml into its own folder: %v (%+v)", err, sum)
	}
	if after, _ := os.ReadFile(resYAML); string(after) != string(before) {
		t.Error("resuming from the folder's own sweep.yaml rewrote it")
	}
}

// TestManifestFieldsChecked: a hand-edited manifest is refused with what
// is wrong in it.
func TestManifestFieldsChecked(t *testing.T) {
	dir := t.TempDir()
	runGrid(t, testGrid, dir, Options{})
	path := filepath.Join(dir, ManifestFile)
	good, _ := os.ReadFile(path)
	for _, c := range []struct{ from, to string }{
		{`"points": 12`, `"points": -4`},
		{`"points": 12`, `"points": 99`},
		{"", "null"},
		{`"format_version": 3`, `"format_version": 0`},
	} {
		edited := c.to
		if c.from != "" {
			edited = strings.Replace(string(good), c.from, c.to, 1)
			if edited == string(good) {
				t.Fatalf("%s not in the manifest:\n%s", c.from, good)
			}
		}
		os.WriteFile(path, []byte(edited), 0o644)
		g, pts := mustExpand(t, testGrid)
		_, err := Run(context.Background(), g.Name, pts, Options{Out: dir, Version: "test"})
		errgolden.Check(t, c.to, err)
	}
}
