package jsonscan

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Explain restates a decoding error of encoding/json for data in the
// document's own words: a syntax error gets its line and column; a value of
// the wrong type names its field by the document's path
// ("device.profile.ram_bytes") and says what was wanted ("a whole number in
// [...]") and what was given, never a Go type name. Other errors are
// returned as they are.
func Explain(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := Position(data, se.Offset)
		return fmt.Errorf("line %d, column %d: %w", line, col, err)
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	// NB: no line: a field decoded by its own UnmarshalJSON reports an
	// offset into its value, not into data.
	msg := fmt.Sprintf("want %s, got %s", wanted(te), given(te.Value))
	if te.Field != "" {
		msg = te.Field + ": " + msg
	}
	return errors.New(msg)
}

// Position is the 1-based line and column of byte offset off in data.
func Position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	line = 1 + strings.Count(string(data[:off]), "\n")
	col = int(off) - strings.LastIndexByte(string(data[:off]), '\n')
	return line, col
}

// given is what a type error's JSON value was: the number as written, or
// the kind of value ("a string", "an array").
func given(v string) string {
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return n
	}
	switch v {
	case "array", "object":
		return "an " + v
	case "bool":
		return "a boolean"
	case "number":
		return "a number"
	case "string":
		return "a string"
	}
	return v
}

// wanted says what the field's Go type holds, in JSON's words; for a whole
// number that was given as one, the range it overflowed.
func wanted(te *json.UnmarshalTypeError) string {
	t := te.Type
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if !whole(te.Value) {
			return "a whole number"
		}
		hi := int64(1)<<(t.Bits()-1) - 1
		return fmt.Sprintf("a whole number in [%d, %d]", -hi-1, hi)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if !whole(te.Value) {
			return "a whole number >= 0"
		}
		return fmt.Sprintf("a whole number in [0, %d]", uint64(1)<<(t.Bits()-1)*2-1)
	case reflect.Float32, reflect.Float64:
		if strings.HasPrefix(te.Value, "number ") {
			return fmt.Sprintf("a number within ±%.2g", maxFloat(t.Bits()))
		}
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Struct, reflect.Map:
		return "a JSON object"
	case reflect.Slice, reflect.Array:
		return "a JSON array"
	}
	return "another kind of value"
}

// whole reports whether a type error's value is a number with no fraction.
func whole(v string) bool {
	n, ok := strings.CutPrefix(v, "number ")
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(n, 64)
	if err != nil { // NB: beyond float64 (1e400): whole, and out of range
		return errors.Is(err, strconv.ErrRange)
	}
	return f == math.Trunc(f)
}

func maxFloat(bits int) float64 {
	if bits == 32 {
		return math.MaxFloat32
	}
	return math.MaxFloat64
}
