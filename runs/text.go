package runs

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
)

// textReader returns r decompressed when it starts with gzip's magic bytes,
// with a leading UTF-8 byte-order mark removed.
func textReader(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		br = bufio.NewReader(zr)
	}
	if bom, _ := br.Peek(3); bytes.Equal(bom, []byte{0xef, 0xbb, 0xbf}) {
		br.Discard(3)
	}
	return br, nil
}
