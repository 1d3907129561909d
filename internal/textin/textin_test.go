package textin

import (
	"bytes"
	"compress/gzip"
	"io"
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
