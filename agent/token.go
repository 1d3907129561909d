package agent

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
)

// TokenBytes is the size of an agent token's random part: 128 bits.
const TokenBytes = 16

// NewToken returns a fresh agent token: 128 bits from crypto/rand as 32
// lowercase hex characters.
func NewToken() (string, error) {
	var b [TokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("agent token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// ValidToken reports whether t has a token's form (32 hex characters).
func ValidToken(t string) bool {
	if len(t) != 2*TokenBytes {
		return false
	}
	_, err := hex.DecodeString(t)
	return err == nil
}

// tokenEqual compares tokens in constant time (for equal lengths; the
// length of a token is public).
func tokenEqual(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
