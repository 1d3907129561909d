package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Hash identifies the experiment: the hex SHA-256 of the spec's canonical
// encoding, which is encoding/json's compact form of the Spec value (fields in
// declaration order, absent groups omitted, no whitespace, numbers in Go's
// shortest round-trip form). Parsing normalizes field order, whitespace and
// number spelling, so two JSON texts of one spec hash alike; any change of a
// value changes it. Hash the resolved spec (Outcome.Spec) to name a run: a
// spec and its resolution describe one run but hash differently. A spec that
// cannot be encoded (a NaN or infinite number; Validate refuses those) hashes
// to "invalid".
func (s Spec) Hash() string {
	b, err := s.Canonical()
	if err != nil {
		return "invalid"
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Canonical is the encoding Hash digests.
func (s Spec) Canonical() ([]byte, error) { return json.Marshal(s) }
