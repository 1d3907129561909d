package gguf

import (
	"errors"
	"fmt"
	"io"
)

// MaxReadElements bounds ReadTensorF32 (1 Gi values, 4 GiB of float32).
const MaxReadElements = 1 << 30

// ReadTensorBytes reads the raw stored bytes of the named tensor.
func (f *File) ReadTensorBytes(name string) ([]byte, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("%s: no tensor %q", f.Name, name)
	}
	if f.r == nil {
		return nil, fmt.Errorf("%s: file is closed", f.Name)
	}
	if t.Elements() > MaxReadElements {
		return nil, fmt.Errorf("%s: tensor %s has %d elements, more than the %d this reader loads", f.Name, name, t.Elements(), MaxReadElements)
	}
	p := make([]byte, t.Bytes)
	if _, err := f.r.ReadAt(p, t.FileOffset); err != nil && !(errors.Is(err, io.EOF) && t.Bytes == 0) {
		return nil, fmt.Errorf("%s: reading tensor %s at byte %d: %w", f.Name, name, t.FileOffset, err)
	}
	return p, nil
}

// ReadTensorF32 reads the named tensor and dequantizes it to float32 in storage order
// (Dims[0] fastest). Supported types: F32, F16, BF16, Q8_0. For a router
// blk.N.ffn_gate_inp.weight of dims [n_embd, n_expert], expert e's weights are
// values [e·n_embd, (e+1)·n_embd).
func (f *File) ReadTensorF32(name string) ([]float32, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("%s: no tensor %q", f.Name, name)
	}
	if !ggmlTypes[t.Type].Dequantizable {
		return nil, fmt.Errorf("%s: tensor %s: cannot dequantize %s (supported: F32, F16, BF16, Q8_0)", f.Name, name, t.Type.Name())
	}
	p, err := f.ReadTensorBytes(name)
	if err != nil {
		return nil, err
	}
	out := make([]float32, t.Elements())
	if err := decode(out, t.Type, p); err != nil {
		return nil, fmt.Errorf("%s: tensor %s: %w", f.Name, name, err)
	}
	return out, nil
}
