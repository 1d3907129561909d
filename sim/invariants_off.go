//go:build !invariants

package sim

// invariants is off in normal builds: the checks compile away.
const invariants = false
