package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// linkPages lists the pages whose links are checked, relative to the root:
// the checked pages (README.md, docs/**/*.md) and the root's other pages.
func linkPages(t *testing.T, root string) []string {
	t.Helper()
	pages := docPages(t, root)
	for _, p := range []string{"CONTRIBUTING.md", "CHANGELOG.md"} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			pages = append(pages, p)
		}
	}
	return pages
}

var (
	// mdLink is an inline Markdown link or image: [text](target) or
	// ![alt](target "title").
	mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// htmlRef is an HTML src or href attribute.
	htmlRef = regexp.MustCompile(`(?:src|href)="([^"]+)"`)
	// inlineCode is a code span, whose text is not a link.
	inlineCode = regexp.MustCompile("`[^`]*`")
	// htmlAnchor is an explicit anchor: <a id="x"> or <a name="x">.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// pageText is a page's lines outside fenced code blocks, with code spans
// blanked; headings are collected as they are.
type pageText struct {
	lines    []string // prose lines (fenced lines blank)
	headings []string // heading texts in order
}

func readPage(t *testing.T, path string) pageText {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p pageText
	fence := ""
	for _, l := range strings.Split(string(data), "\n") {
		trim := strings.TrimSpace(l)
		switch {
		case fence == "" && (strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~")):
			fence = trim[:3]
			l = ""
		case fence != "":
			if strings.HasPrefix(trim, fence) {
				fence = ""
			}
			l = ""
		case strings.HasPrefix(l, "#"):
			if h := strings.TrimLeft(l, "#"); strings.HasPrefix(h, " ") && len(l)-len(h) <= 6 {
				p.headings = append(p.headings, strings.TrimSpace(h))
			}
		}
		p.lines = append(p.lines, inlineCode.ReplaceAllStringFunc(l, func(s string) string { return strings.Repeat(" ", len(s)) }))
	}
	return p
}

// githubSlug is the anchor GitHub gives a heading: the text lower-cased,
// inline markup and punctuation other than - and _ dropped, spaces turned
// into hyphens.
func githubSlug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors is the set of a page's anchors: its headings' slugs, a repeated
// slug numbered -1, -2, ... as GitHub numbers them, and explicit <a id>s.
func (p pageText) anchors() map[string]bool {
	set := map[string]bool{}
	seen := map[string]int{}
	for _, h := range p.headings {
		// Links in headings keep only their text.
		h = mdLink.ReplaceAllStringFunc(h, func(s string) string { return s[strings.Index(s, "[")+1 : strings.Index(s, "]")] })
		s := githubSlug(h)
		if n := seen[s]; n > 0 {
			set[s+"-"+strconv.Itoa(n)] = true
		} else {
			set[s] = true
		}
		seen[s]++
	}
	for _, l := range p.lines {
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			set[m[1]] = true
		}
	}
	return set
}

// TestDocLinks: every relative link and image of README.md, CONTRIBUTING.md,
// CHANGELOG.md and docs/**/*.md names a file that exists, and every #anchor
// names a heading (by GitHub's slug rules) of the page it points into.
func TestDocLinks(t *testing.T) {
	root := repoRoot(t)
	pages := map[string]pageText{}
	page := func(rel string) pageText {
		if p, ok := pages[rel]; ok {
			return p
		}
		p := readPage(t, filepath.Join(root, filepath.FromSlash(rel)))
		pages[rel] = p
		return p
	}
	links := 0
	linked := map[string]bool{} // every file a link names, from the root
	for _, rel := range linkPages(t, root) {
		for i, l := range page(rel).lines {
			var targets []string
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				targets = append(targets, m[1])
			}
			for _, m := range htmlRef.FindAllStringSubmatch(l, -1) {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				if err := checkLink(root, rel, target, page); err != "" {
					t.Errorf("%s:%d: link %s: %s", rel, i+1, target, err)
				}
				if file, _, _ := strings.Cut(target, "#"); file != "" {
					linked[filepath.ToSlash(filepath.Join(filepath.Dir(rel), file))] = true
				}
			}
		}
	}
	t.Logf("checked %d links in %d pages", links, len(linkPages(t, root)))
	// Every docs page is reachable: some page (README.md's index) links to it.
	for _, rel := range docPages(t, root)[1:] {
		if !linked[rel] {
			t.Errorf("%s: no page links to it (add it to README.md's Documentation table)", rel)
		}
	}
	// Every picture is shown by the page it illustrates.
	imgs, err := filepath.Glob(filepath.Join(root, "docs", "img", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs {
		if rel := "docs/img/" + filepath.Base(img); !linked[rel] {
			t.Errorf("%s: no page shows it", rel)
		}
	}
}

// checkLink resolves target from page rel and says what is wrong with it, or "".
func checkLink(root, rel, target string, page func(string) pageText) string {
	file, anchor, _ := strings.Cut(target, "#")
	dest := rel
	if file != "" {
		dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(rel), file)))
		if dest == ".." || strings.HasPrefix(dest, "../") {
			return "points outside the repository"
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
			return "no such file"
		}
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(dest, ".md") {
		return "an anchor into a file that is not Markdown"
	}
	if !page(dest).anchors()[anchor] {
		return "no heading of " + dest + " has the anchor #" + anchor
	}
	return ""
}

// TestGithubSlug pins the slug rules the link check relies on.
func TestGithubSlug(t *testing.T) {
	for _, c := range []struct{ heading, slug string }{
		{"Per-token series", "per-token-series"},
		{"trace synth, trace stats", "trace-synth-trace-stats"},
		{"`calibrate --from-run`: fit a profile", "calibrate---from-run-fit-a-profile"},
		{"What is measured, what is assumed", "what-is-measured-what-is-assumed"},
		{"Sweeps (2026-12-04)", "sweeps-2026-12-04"},
		{"snake_case and Ünïcode", "snake_case-and-ünïcode"},
	} {
		if got := githubSlug(c.heading); got != c.slug {
			t.Errorf("githubSlug(%q) = %q, want %q", c.heading, got, c.slug)
		}
	}
	p := pageText{headings: []string{"Notes", "Notes", "Notes"}}
	for _, a := range []string{"notes", "notes-1", "notes-2"} {
		if !p.anchors()[a] {
			t.Errorf("repeated headings: no anchor %q", a)
		}
	}
}
