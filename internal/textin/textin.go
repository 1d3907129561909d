// Package textin opens text inputs the way users hand them over: plain or
// gzip-compressed (recognised by its magic bytes, not its name), with or
// without a leading UTF-8 byte-order mark.
package textin

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
)

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
