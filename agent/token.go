package agent

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
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
	_, err := hex.DecodeString(t)
	return len(t) == 2*TokenBytes && err == nil
}

// authorized reports whether r carries "Authorization: Bearer TOKEN" with
// token, compared in constant time (for equal lengths; a token's length is
// public).
func authorized(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}
