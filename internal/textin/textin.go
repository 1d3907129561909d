// Package textin opens text inputs the way users hand them over: plain or
// gzip-compressed (recognised by its magic bytes, not its name), with or
// without a leading UTF-8 byte-order mark, and never more of them than a
// limit suited to their kind (ReadFile, Limit).
package textin

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
)

// TooLargeError is an input longer than its kind's limit: the reader stopped
// at Limit+1 bytes (a regular file larger than Limit is not read at all).
type TooLargeError struct {
	Name  string // the input as named by the caller
	Kind  string // what it should have been ("device profile")
	Limit int64  // the most bytes taken
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than %d MiB: not a %s (was another file given?)", e.Name, e.Limit>>20, e.Kind)
}

// ReadFile reads the file at path ("-" is stdin) whole, refusing one longer
// than limit bytes: a regular file by its size before reading, anything else
// (a device such as /dev/zero, a pipe) after limit+1 bytes, so memory stays
// within limit whatever path names. kind says what the file should be.
func ReadFile(path, kind string, limit int64, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		return ReadAll(stdin, path, kind, limit)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > limit {
		return nil, &TooLargeError{Name: path, Kind: kind, Limit: limit}
	}
	return ReadAll(f, path, kind, limit)
}

// ReadAll reads r to its end, refusing more than limit bytes (see ReadFile).
func ReadAll(r io.Reader, name, kind string, limit int64) ([]byte, error) {
	return io.ReadAll(Limit(r, name, kind, limit))
}

// Limit is r failing with a *TooLargeError once more than limit bytes are
// read from it, for inputs read as a stream.
func Limit(r io.Reader, name, kind string, limit int64) io.Reader {
	return &limited{r: io.LimitReader(r, limit+1), err: &TooLargeError{Name: name, Kind: kind, Limit: limit}, left: limit}
}

type limited struct {
	r    io.Reader
	err  error
	left int64 // bytes still allowed
}

func (l *limited) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if l.left -= int64(n); l.left < 0 {
		return 0, l.err
	}
	return n, err
}

// Reader returns r's text: decompressed when r starts with gzip's magic
// bytes, with a leading UTF-8 byte-order mark removed. Call done when
// finished reading.
func Reader(r io.Reader) (text io.Reader, done func(), err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	done = func() {}
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, err
		}
		done = func() { zr.Close() }
		br = bufio.NewReaderSize(zr, 64<<10)
	}
	if bom, _ := br.Peek(3); bytes.Equal(bom, []byte{0xef, 0xbb, 0xbf}) {
		br.Discard(3)
	}
	return br, done, nil
}
