//go:build llamacpp

package llama

// #include <stdint.h>
import "C"

import "runtime/cgo"

//export lessimGoHook
func lessimGoHook(handle C.uintptr_t, kind C.int, block C.int) {
	h := cgo.Handle(handle).Value().(func(HookKind, int))
	h(HookKind(kind), int(block))
}
