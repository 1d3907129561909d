// Package lint holds tests that enforce lessim's layering (lint_test.go):
// the imports each package may and may not have, checked with go list.
package lint
