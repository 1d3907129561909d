//go:build llamacpp

package llama

/*
#cgo CFLAGS: -O2
#cgo LDFLAGS: -lstdc++ -lm
#include "llama.h"
*/
import "C"

// NB: this blank import is what compiles llama.cpp, ggml and ggml's CPU backend
// (from the ollama module's sources, no cmake). Headers come from CGO_CPPFLAGS;
// see doc.go.
import _ "github.com/ollama/ollama/llama/llama.cpp/src"

// SystemInfo reports llama.cpp's build and CPU feature summary.
func SystemInfo() string { return C.GoString(C.llama_print_system_info()) }

// Engine names the engine this package binds, for trace provenance.
const Engine = "llama.cpp via github.com/ollama/ollama v0.17.4"
