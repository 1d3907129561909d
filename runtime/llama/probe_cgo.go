//go:build llamacpp

package llama

/*
#cgo LDFLAGS: -lstdc++ -lm
#include "llama.h"
*/
import "C"

import _ "github.com/ollama/ollama/llama/llama.cpp/src"

// SystemInfo reports llama.cpp's build info.
func SystemInfo() string { return C.GoString(C.llama_print_system_info()) }
