package lint

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/lessim/lessim"

// pkg is one package's non-test imports, as go list reports them.
type pkg struct {
	path    string
	imports []string
	cgo     bool // has files that import "C"
}

// rule is one layering rule: which packages it covers and why an import of
// theirs is refused ("" when allowed).
type rule struct {
	name    string
	applies func(path string) bool
	refuse  func(imp string) string
}

// simForbidden are the standard packages sim must not import: the core does no
// I/O, reads no clock and calls no C (DESIGN.md: "sim ... must not do I/O,
// read the clock").
var simForbidden = []string{"os", "os/exec", "os/signal", "time", "net", "syscall", "unsafe", "runtime/cgo", "C"}

// simLessim are the lessim packages sim may import: pure ones.
var simLessim = []string{module + "/devices", module + "/traces"}

var rules = []rule{
	{
		name:    "sim is a pure function of its inputs",
		applies: func(p string) bool { return p == module+"/sim" },
		refuse: func(imp string) string {
			switch {
			case slices.Contains(simForbidden, imp) || strings.HasPrefix(imp, "net/") || strings.HasPrefix(imp, "os/"):
				return "I/O, clock or cgo in the core"
			case strings.HasPrefix(imp, module+"/"):
				if !slices.Contains(simLessim, imp) {
					return "a lessim package sim must not depend on"
				}
			case !isStd(imp):
				return "a package outside the standard library and lessim"
			}
			return ""
		},
	},
	{
		name:    "runtime does not import experiment",
		applies: func(p string) bool { return strings.HasPrefix(p, module+"/runtime/") },
		refuse: func(imp string) string {
			if imp == module+"/experiment" || strings.HasPrefix(imp, module+"/experiment/") {
				return "runtime drives the engine; experiment builds on it, not the other way"
			}
			return ""
		},
	},
	{
		name:    "only reports draws plots",
		applies: func(p string) bool { return p != module+"/reports" },
		refuse: func(imp string) string {
			if imp == "gonum.org/v1/plot" || strings.HasPrefix(imp, "gonum.org/v1/plot/") {
				return "tables, plots and HTML are drawn by reports"
			}
			return ""
		},
	},
}

// pending are known violations that issue 33 part 1 removes (runtime/live
// translates an experiment.Spec into its options); delete an entry when its
// import goes. They are allowed, not required.
var pending = map[[2]string]bool{
	{module + "/runtime/live", module + "/experiment"}: true,
}

// isStd reports whether imp is a standard-library path (no dot in its first
// element; "C" aside).
func isStd(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return imp != "C" && !strings.Contains(first, ".")
}

// violations lists every import of pkgs that a rule refuses, as
// "package imports X: why (rule)".
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		for _, r := range rules {
			if !r.applies(p.path) {
				continue
			}
			imps := p.imports
			if p.cgo && !slices.Contains(imps, "C") {
				imps = append(slices.Clone(imps), "C")
			}
			for _, imp := range imps {
				if pending[[2]string{p.path, imp}] {
					continue
				}
				if why := r.refuse(imp); why != "" {
					out = append(out, p.path+" imports "+imp+": "+why+" ("+r.name+")")
				}
			}
		}
	}
	return out
}

// listPackages runs go list over the module with the given build tags.
func listPackages(t *testing.T, tags string) []pkg {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	args := []string{"list", "-e", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}\t{{len .CgoFiles}}\t{{.Dir}}\t{{join .GoFiles \" \"}} {{join .CgoFiles \" \"}}"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command(goBin, append(args, module+"/...")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 5 {
			t.Fatalf("go list line %q", sc.Text())
		}
		// NB: go test caches a passing result keyed by the files the test
		// itself touches, not go list's; stating each folder and source file
		// makes an added file or an edited import rerun the test.
		os.Stat(f[3])
		for _, name := range strings.Fields(f[4]) {
			os.Stat(filepath.Join(f[3], name))
		}
		pkgs = append(pkgs, pkg{path: f[0], imports: strings.Fields(f[1]), cgo: f[2] != "0"})
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	return pkgs
}

// TestImports checks every package of the module, in the pure-Go build and
// with the llamacpp tag (runtime's cgo files), against the rules.
func TestImports(t *testing.T) {
	for _, tags := range []string{"", "llamacpp"} {
		pkgs := listPackages(t, tags)
		if !slices.ContainsFunc(pkgs, func(p pkg) bool { return p.path == module+"/sim" }) {
			t.Fatalf("tags %q: sim not listed", tags)
		}
		for _, v := range violations(pkgs) {
			t.Errorf("tags %q: %s", tags, v)
		}
	}
}

// TestRulesCatch: each rule refuses what it should, so TestImports can fail.
func TestRulesCatch(t *testing.T) {
	for _, tc := range []struct {
		p    pkg
		want int
	}{
		{pkg{path: module + "/sim", imports: []string{"math", "slices", module + "/traces"}}, 0},
		{pkg{path: module + "/sim", imports: []string{"math", "os"}}, 1},
		{pkg{path: module + "/sim", imports: []string{"time", "net/http", "os/exec"}}, 3},
		{pkg{path: module + "/sim", imports: []string{"math"}, cgo: true}, 1}, // "C"
		{pkg{path: module + "/sim", imports: []string{"gonum.org/v1/gonum/stat"}}, 1},
		{pkg{path: module + "/sim", imports: []string{module + "/runtime/llama"}}, 1},
		{pkg{path: module + "/runtime/record", imports: []string{module + "/experiment"}}, 1},
		{pkg{path: module + "/runtime/live", imports: []string{module + "/experiment"}}, 0}, // pending
		{pkg{path: module + "/validation", imports: []string{"gonum.org/v1/plot/plotter"}}, 1},
		{pkg{path: module + "/reports", imports: []string{"gonum.org/v1/plot/plotter"}}, 0},
	} {
		if got := violations([]pkg{tc.p}); len(got) != tc.want {
			t.Errorf("%s importing %v (cgo %v): %d violations %q, want %d", tc.p.path, tc.p.imports, tc.p.cgo, len(got), got, tc.want)
		}
	}
}
