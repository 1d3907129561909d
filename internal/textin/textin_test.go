package textin

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReader(t *testing.T) {
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.Bytes()
	}
	for name, in := range map[string][]byte{
		"plain": []byte("a,b\n"), "bom": []byte("\ufeffa,b\n"),
		"gzip": gz("a,b\n"), "gzip+bom": gz("\ufeffa,b\n"),
	} {
		r, done, err := Reader(bytes.NewReader(in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, _ := io.ReadAll(r)
		done()
		if string(got) != "a,b\n" {
			t.Errorf("%s: %q", name, got)
		}
	}
	if _, _, err := Reader(bytes.NewReader([]byte{0x1f, 0x8b, 0})); err == nil {
		t.Error("a broken gzip header was accepted")
	}
}

// TestReadFileLimit: a device that never ends and a sparse 1 GB file are
// refused with a *TooLargeError having read at most limit+1 bytes (the
// regular file none: its size is checked first); a file of exactly limit
// bytes, and a stream within its limit, are read whole.
func TestReadFileLimit(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 1<<30); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/zero", big} {
		_, err := ReadFile(path, "device profile", 1<<20, nil)
		var tl *TooLargeError
		if !errors.As(err, &tl) || tl.Name != path || tl.Limit != 1<<20 {
			t.Errorf("%s: got %v, want a *TooLargeError", path, err)
		}
	}
	exact := filepath.Join(t.TempDir(), "exact")
	os.WriteFile(exact, bytes.Repeat([]byte("a"), 100), 0o644)
	if b, err := ReadFile(exact, "x", 100, nil); err != nil || len(b) != 100 {
		t.Errorf("a file of exactly the limit: %d bytes, %v", len(b), err)
	}
	if _, err := ReadFile("-", "x", 99, bytes.NewReader(make([]byte, 100))); err == nil {
		t.Error("stdin beyond the limit was read")
	}
	n, err := io.Copy(io.Discard, Limit(strings.NewReader("abc"), "s", "x", 3))
	if n != 3 || err != nil {
		t.Errorf("a stream within its limit: %d bytes, %v", n, err)
	}
}
