package gguf

import (
	"fmt"
	"strings"
)

func (f *File) kv(key string) (KV, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return KV{}, false
	}
	return f.KVs[i], true
}

// Value returns the metadata pair of key.
func (f *File) Value(key string) (KV, bool) { return f.kv(key) }

// String returns a string value.
func (f *File) String(key string) (string, bool) {
	kv, ok := f.kv(key)
	if !ok {
		return "", false
	}
	s, ok := kv.Value.(string)
	return s, ok
}

// Uint returns an integer value of any integer type as uint64; negative values and
// non-integers report false.
func (f *File) Uint(key string) (uint64, bool) {
	kv, ok := f.kv(key)
	if !ok {
		return 0, false
	}
	return toUint(kv.Value)
}

func toUint(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	case int8:
		return uint64(x), x >= 0
	case int16:
		return uint64(x), x >= 0
	case int32:
		return uint64(x), x >= 0
	case int64:
		return uint64(x), x >= 0
	}
	return 0, false
}

// Float returns a floating-point or integer value as float64.
func (f *File) Float(key string) (float64, bool) {
	kv, ok := f.kv(key)
	if !ok {
		return 0, false
	}
	switch x := kv.Value.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	if u, ok := toUint(kv.Value); ok {
		return float64(u), true
	}
	if i, ok := kv.Value.(int64); ok {
		return float64(i), true
	}
	return 0, false
}

// Strings returns a string array value.
func (f *File) Strings(key string) ([]string, bool) {
	kv, ok := f.kv(key)
	if !ok {
		return nil, false
	}
	a, ok := kv.Value.(Array)
	if !ok {
		return nil, false
	}
	s, ok := a.Values.([]string)
	return s, ok
}

// Arch returns general.architecture ("" when absent).
func (f *File) Arch() string {
	s, _ := f.String("general.architecture")
	return s
}

// Tensor returns the directory entry of the named tensor.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// uintOrFirst reads an integer key that some architectures store per layer as an
// array (e.g. attention.head_count_kv); for an array it returns the maximum.
func (f *File) uintOrMax(key string) (uint64, bool) {
	if u, ok := f.Uint(key); ok {
		return u, true
	}
	kv, ok := f.kv(key)
	if !ok {
		return 0, false
	}
	a, ok := kv.Value.(Array)
	if !ok {
		return 0, false
	}
	var mx uint64
	found := false
	forEach(a, func(v any) {
		if u, ok := toUint(v); ok {
			mx, found = max(mx, u), true
		}
	})
	return mx, found
}

func forEach(a Array, fn func(any)) {
	switch s := a.Values.(type) {
	case []uint8:
		each(s, fn)
	case []int8:
		each(s, fn)
	case []uint16:
		each(s, fn)
	case []int16:
		each(s, fn)
	case []uint32:
		each(s, fn)
	case []int32:
		each(s, fn)
	case []float32:
		each(s, fn)
	case []bool:
		each(s, fn)
	case []string:
		each(s, fn)
	case []uint64:
		each(s, fn)
	case []int64:
		each(s, fn)
	case []float64:
		each(s, fn)
	case []Array:
		each(s, fn)
	}
}

func each[T any](s []T, fn func(any)) {
	for _, x := range s {
		fn(x)
	}
}

// formatValue renders a value for inspection: scalars in full (strings quoted, long
// ones cut), arrays as their element type and length with the first few elements.
func formatValue(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 80 {
			return fmt.Sprintf("%q… (%d bytes)", x[:80], len(x))
		}
		return fmt.Sprintf("%q", x)
	case Array:
		var parts []string
		n := 0
		forEach(x, func(e any) {
			if n < 4 {
				parts = append(parts, formatValue(e))
			}
			n++
		})
		more := ""
		if n > 4 {
			more = ", …"
		}
		return fmt.Sprintf("[%s × %d: %s%s]", x.Elem, n, strings.Join(parts, ", "), more)
	}
	return fmt.Sprint(v)
}
