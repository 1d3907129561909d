// Package jsonscan walks a JSON document token by token, for the checks
// encoding/json does not make: it refuses an object key given twice (the
// decoder silently keeps the last) and shows each scalar value with its path.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Scan walks the one JSON value in data and calls visit, when not nil, with
// each scalar value (string, float64 as json.Number, bool or nil for null)
// and its path: object keys joined by dots, array indexes in brackets
// ("policy.name", "flash.single_lane[0].read_bytes"; "" for a top-level
// scalar). It returns an error naming the path and line of the first key
// an object repeats, or data's syntax error.
func Scan(data []byte, visit func(path string, v json.Token)) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	s := scanner{dec: dec, data: data, visit: visit}
	if err := s.value(""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// DuplicateKeys is Scan without a visitor: the first repeated key, if any.
func DuplicateKeys(data []byte) error { return Scan(data, nil) }

type scanner struct {
	dec   *json.Decoder
	data  []byte
	visit func(string, json.Token)
}

// value reads one value at path.
func (s *scanner) value(path string) error {
	tok, err := s.dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		return s.object(path)
	case json.Delim('['):
		for i := 0; s.dec.More(); i++ {
			if err := s.value(path + "[" + strconv.Itoa(i) + "]"); err != nil {
				return err
			}
		}
		_, err = s.dec.Token() // ]
		return err
	}
	if s.visit != nil {
		s.visit(path, tok)
	}
	return nil
}

// object reads an object's members after its '{', refusing a repeated key.
func (s *scanner) object(path string) error {
	seen := map[string]bool{}
	for s.dec.More() {
		tok, err := s.dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string) // NB: the decoder only yields string keys
		p := key
		if path != "" {
			p = path + "." + key
		}
		if seen[key] {
			line, _ := Position(s.data, s.dec.InputOffset())
			return fmt.Errorf("line %d: duplicate key %s: each key may appear once in an object", line, p)
		}
		seen[key] = true
		if err := s.value(p); err != nil {
			return err
		}
	}
	_, err := s.dec.Token() // }
	return err
}
