//go:build !llamacpp

package record

import (
	"os"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
)

// TestMain writes testdata/errors.json when run with -rewrite-errors (the
// llamacpp build's TestMain is in record_test.go).
func TestMain(m *testing.M) { os.Exit(errgolden.Main(m)) }
