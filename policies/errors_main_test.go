package policies

import (
	"os"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
)

// TestMain writes testdata/errors.json when run with -rewrite-errors.
func TestMain(m *testing.M) { os.Exit(errgolden.Main(m)) }
