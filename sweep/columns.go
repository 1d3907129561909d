package sweep

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// colKind is the Parquet type of a flattened column.
type colKind int

const (
	kString colKind = iota
	kBool
	kInt
	kFloat
	kStrings // list<string>
	kInts    // list<int64>
	kFloats  // list<float64>
	kJSON    // any other value, as its JSON text
)

// column is one flattened field of a Go struct type: its name, its type, and
// how to reach it from a value of the root type.
type column struct {
	name string
	kind colKind
	// path is the field index path from the root (reflect.Value.FieldByIndex,
	// but stopping at nil pointers: the value is then null).
	path []int
	// elem, when set, makes the column a list of one field of a slice of
	// structs: path reaches the slice and elem the field of each element.
	elem []int
}

// columnsOf flattens struct type t into columns named prefix + the JSON path
// of each field (nested struct names joined with "."). Fields tagged
// json:"-" and unexported fields are left out; a slice of structs becomes
// one list column per scalar field of the element; maps, interfaces and
// anything else become a JSON text column.
func columnsOf(prefix string, t reflect.Type) []column {
	var out []column
	flattenType(prefix, t, nil, &out)
	return out
}

func flattenType(prefix string, t reflect.Type, path []int, out *[]column) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, skip := jsonName(f)
		if skip {
			continue
		}
		p := append(append([]int(nil), path...), i)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && ft.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
			flattenType(prefix, ft, p, out) // embedded: fields promoted, as encoding/json does
			continue
		}
		full := prefix + name
		if ft.Kind() == reflect.Struct && !implementsMarshaler(ft) {
			flattenType(full+".", ft, p, out)
			continue
		}
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct && !implementsMarshaler(ft.Elem()) {
			et := ft.Elem()
			for j := range et.NumField() {
				ef := et.Field(j)
				en, skip := jsonName(ef)
				if skip || !ef.IsExported() {
					continue
				}
				if k, ok := listKind(ef.Type); ok {
					lk := map[colKind]colKind{kString: kStrings, kInt: kInts, kFloat: kFloats}[k]
					*out = append(*out, column{name: full + "." + en, kind: lk, path: p, elem: []int{j}})
				}
			}
			continue
		}
		*out = append(*out, column{name: full, kind: kindOf(ft), path: p})
	}
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

func implementsMarshaler(t reflect.Type) bool {
	return t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType)
}

// jsonName is f's JSON name and whether encoding/json skips it.
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", true
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, false
}

// kindOf is the column type of a scalar or slice field.
func kindOf(t reflect.Type) colKind {
	if implementsMarshaler(t) {
		return kJSON
	}
	switch t.Kind() {
	case reflect.String:
		return kString
	case reflect.Bool:
		return kBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		// NB: a uint64 above 2^63 (a seed) is stored with the same 64 bits.
		return kInt
	case reflect.Float32, reflect.Float64:
		return kFloat
	case reflect.Slice, reflect.Array:
		if k, ok := listKind(t.Elem()); ok {
			switch k {
			case kString:
				return kStrings
			case kInt:
				return kInts
			case kFloat:
				return kFloats
			}
		}
	}
	return kJSON
}

// listKind is the list column type for slice elements of type t, if scalar.
func listKind(t reflect.Type) (colKind, bool) {
	switch k := kindOf(t); k {
	case kString, kInt, kFloat:
		if t.Kind() == reflect.Slice { // []byte and friends are not scalars here
			return 0, false
		}
		return k, true
	}
	return 0, false
}

// arrowType is the Arrow type of a column kind.
func (k colKind) arrowType() arrow.DataType {
	switch k {
	case kString, kJSON:
		return arrow.BinaryTypes.String
	case kBool:
		return arrow.FixedWidthTypes.Boolean
	case kInt:
		return arrow.PrimitiveTypes.Int64
	case kFloat:
		return arrow.PrimitiveTypes.Float64
	case kStrings:
		return arrow.ListOf(arrow.BinaryTypes.String)
	case kInts:
		return arrow.ListOf(arrow.PrimitiveTypes.Int64)
	case kFloats:
		return arrow.ListOf(arrow.PrimitiveTypes.Float64)
	}
	panic(fmt.Sprintf("sweep: unknown column kind %d", k))
}

// value walks root to the column's field; ok is false at a nil pointer.
func (c *column) value(root reflect.Value) (reflect.Value, bool) {
	v := root
	for _, i := range c.path {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(i)
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return reflect.Value{}, false
		}
		v = v.Elem()
	}
	return v, true
}

// appendTo appends the column's value in root to b (null when unreachable).
func (c *column) appendTo(b array.Builder, root reflect.Value) error {
	v, ok := c.value(root)
	if !ok {
		b.AppendNull()
		return nil
	}
	if c.elem != nil {
		lb := b.(*array.ListBuilder)
		if v.IsNil() {
			lb.AppendNull()
			return nil
		}
		lb.Append(true)
		for i := range v.Len() {
			appendScalar(lb.ValueBuilder(), v.Index(i).FieldByIndex(c.elem))
		}
		return nil
	}
	switch c.kind {
	case kJSON:
		js, err := json.Marshal(v.Interface())
		if err != nil {
			return fmt.Errorf("column %s: %w", c.name, err)
		}
		b.(*array.StringBuilder).Append(string(js))
	case kStrings, kInts, kFloats:
		lb := b.(*array.ListBuilder)
		if v.Kind() == reflect.Slice && v.IsNil() {
			lb.AppendNull()
			return nil
		}
		lb.Append(true)
		for i := range v.Len() {
			appendScalar(lb.ValueBuilder(), v.Index(i))
		}
	default:
		appendScalar(b, v)
	}
	return nil
}

// appendScalar appends a string, bool, integer or float value.
func appendScalar(b array.Builder, v reflect.Value) {
	switch b := b.(type) {
	case *array.StringBuilder:
		b.Append(v.String())
	case *array.BooleanBuilder:
		b.Append(v.Bool())
	case *array.Int64Builder:
		if v.CanInt() {
			b.Append(v.Int())
		} else {
			b.Append(int64(v.Uint()))
		}
	case *array.Float64Builder:
		b.Append(v.Float())
	}
}
