//go:build llamacpp

package llama

/*
#include <stdlib.h>
#include "llama.h"
#include "capture.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"unsafe"
)

// ModelOptions configures Load.
type ModelOptions struct {
	// Verbose forwards llama.cpp's and ggml's log to stderr; by default it is
	// silenced (the last error line is still kept for error messages).
	Verbose bool
}

// Model is a loaded GGUF model. Its weights stay in llama.cpp's read-only file
// mapping (mmap on, no repacking into extra buffer types, no GPU layers), so the
// page cache, not the Go heap, holds them. A Model is safe to share between
// Contexts but must be closed after all of them.
type Model struct {
	m     *C.struct_llama_model
	vocab *C.struct_llama_vocab
	info  ModelInfo
}

// ModelInfo is what llama.cpp reports about a loaded model.
type ModelInfo struct {
	Arch        string // general.architecture
	Blocks      int    // transformer blocks (llama_model_n_layer)
	Embd        int    // hidden size
	Vocab       int    // tokens in the vocabulary
	Experts     int    // <arch>.expert_count (0 for dense models)
	ExpertsUsed int    // <arch>.expert_used_count
	Params      uint64 // parameter count
	SizeBytes   uint64 // tensor bytes
}

var backendOnce sync.Once

// setLog installs the quiet or verbose log sink (a process-wide llama.cpp setting).
func setLog(verbose bool) {
	if verbose {
		C.llama_log_set(C.ggml_log_callback(C.lessim_log_stderr), nil)
	} else {
		C.llama_log_set(C.ggml_log_callback(C.lessim_log_quiet), nil)
	}
}

// Load maps a GGUF model with llama.cpp. The caller should validate the file
// first (runtime/record does): llama.cpp aborts the process on some malformed
// inputs instead of returning an error.
func Load(path string, opt ModelOptions) (*Model, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	backendOnce.Do(func() { C.llama_backend_init() })
	setLog(opt.Verbose)
	C.lessim_clear_last_error()

	p := C.llama_model_default_params()
	p.n_gpu_layers = 0
	p.use_mmap = true
	p.use_mlock = false
	p.use_extra_bufts = false
	p.check_tensors = false
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	m := C.llama_model_load_from_file(cpath, p)
	if m == nil {
		return nil, fmt.Errorf("load model %s: llama.cpp refused it%s", path, lastError())
	}
	mod := &Model{m: m, vocab: C.llama_model_get_vocab(m)}
	mod.info = ModelInfo{
		Arch:      mod.Meta("general.architecture"),
		Blocks:    int(C.llama_model_n_layer(m)),
		Embd:      int(C.llama_model_n_embd(m)),
		Vocab:     int(C.llama_vocab_n_tokens(mod.vocab)),
		Params:    uint64(C.llama_model_n_params(m)),
		SizeBytes: uint64(C.llama_model_size(m)),
	}
	mod.info.Experts, _ = strconv.Atoi(mod.Meta(mod.info.Arch + ".expert_count"))
	mod.info.ExpertsUsed, _ = strconv.Atoi(mod.Meta(mod.info.Arch + ".expert_used_count"))
	return mod, nil
}

// lastError formats llama.cpp's last logged error line as ": <line>" or "".
func lastError() string {
	s := C.GoString(C.lessim_last_error())
	if s == "" {
		return ""
	}
	return ": " + s
}

// Info describes the loaded model.
func (m *Model) Info() ModelInfo { return m.info }

// Meta returns a GGUF metadata value as llama.cpp formats it, "" when absent.
func (m *Model) Meta(key string) string {
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	var buf [256]C.char
	n := C.llama_model_meta_val_str(m.m, ck, &buf[0], C.size_t(len(buf)))
	if n < 0 {
		return ""
	}
	if int(n) >= len(buf) {
		big := make([]C.char, int(n)+1)
		C.llama_model_meta_val_str(m.m, ck, &big[0], C.size_t(len(big)))
		return C.GoString(&big[0])
	}
	return C.GoString(&buf[0])
}

// Close frees the model. Contexts created from it must be closed first.
func (m *Model) Close() error {
	if m == nil || m.m == nil {
		return errors.New("close model: already closed")
	}
	C.llama_model_free(m.m)
	m.m = nil
	return nil
}
