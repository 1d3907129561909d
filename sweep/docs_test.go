package sweep

import (
	"os"
	"regexp"
	"testing"
)

// TestDocsListEveryColumn keeps docs/sweeps.md's schema complete: every
// results column must appear there as a word.
func TestDocsListEveryColumn(t *testing.T) {
	doc, err := os.ReadFile("../docs/sweeps.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ColumnNames() {
		if !regexp.MustCompile(`(^|[\s|` + "`" + `])` + regexp.QuoteMeta(n) + `([\s|` + "`" + `]|$)`).Match(doc) {
			t.Errorf("docs/sweeps.md does not list column %s", n)
		}
	}
}
