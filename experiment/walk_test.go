package experiment

import (
	"fmt"
	"reflect"
)

// leaf is one settable field of a spec, found by walking it: its JSON path
// and its value.
type leaf struct {
	path string
	v    reflect.Value
}

// leaves lists every leaf field reachable from v (through non-nil pointers
// and slices), depth first in declaration order.
func leaves(v reflect.Value, path string) []leaf {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return leaves(v.Elem(), path)
	case reflect.Struct:
		var out []leaf
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := f.Tag.Get("json")
			for j := range len(name) {
				if name[j] == ',' {
					name = name[:j]
					break
				}
			}
			out = append(out, leaves(v.Field(i), join(path, name))...)
		}
		return out
	case reflect.Slice:
		var out []leaf
		for i := range v.Len() {
			out = append(out, leaves(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
		if v.Type().Elem().Kind() == reflect.String {
			return []leaf{{path, v}}
		}
		return out
	}
	return []leaf{{path, v}}
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// mutate changes a leaf's value to a different one of its type.
func mutate(l leaf) {
	v := l.v
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(v.Int() + 1)
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		v.SetUint(v.Uint() + 1)
	case reflect.Float64, reflect.Float32:
		v.SetFloat(v.Float() + 0.25)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Slice: // []string
		v.Set(reflect.Append(v, reflect.ValueOf("x")))
	case reflect.Map: // keyed numbers (a profile's format_efficiency, pass_scale)
		m := reflect.MakeMap(v.Type())
		for _, k := range v.MapKeys() {
			m.SetMapIndex(k, v.MapIndex(k))
		}
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		if k.Kind() == reflect.Int {
			k.SetInt(3)
		} else {
			k.SetString("x")
		}
		e.SetFloat(0.25)
		m.SetMapIndex(k, e)
		v.Set(m)
	default:
		panic("mutate: unhandled kind " + v.Kind().String() + " at " + l.path)
	}
}

// floats are the float leaves of a spec.
func floats(s *Spec) []leaf {
	var out []leaf
	for _, l := range leaves(reflect.ValueOf(s), "") {
		if l.v.Kind() == reflect.Float64 {
			out = append(out, l)
		}
	}
	return out
}
