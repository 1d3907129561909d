//go:build invariants

package sim

// invariants turns on the books' consistency checks (build tag invariants):
// they panic on the first violation. Tests run with -tags invariants.
const invariants = true
