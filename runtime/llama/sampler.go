//go:build llamacpp

package llama

/*
#include "llama.h"
*/
import "C"

import (
	"errors"
	"fmt"
)

// SamplerOptions configures NewSampler. Temperature 0 means greedy (argmax);
// otherwise the chain is top-k (if TopK > 0), temperature, then a draw from
// llama.cpp's RNG seeded with Seed, so the same seed gives the same tokens.
type SamplerOptions struct {
	Temperature float32
	TopK        int
	Seed        uint64
}

// Sampler picks the next token from a Context's last logits.
type Sampler struct {
	s *C.struct_llama_sampler
}

// NewSampler builds a llama.cpp sampler chain.
func NewSampler(opt SamplerOptions) (*Sampler, error) {
	var errs []error
	if opt.Temperature < 0 {
		errs = append(errs, fmt.Errorf("temperature %g: want >= 0", opt.Temperature))
	}
	if opt.TopK < 0 {
		errs = append(errs, fmt.Errorf("top-k %d: want >= 0", opt.TopK))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	chain := C.llama_sampler_chain_init(C.llama_sampler_chain_default_params())
	if opt.Temperature == 0 {
		C.llama_sampler_chain_add(chain, C.llama_sampler_init_greedy())
		return &Sampler{s: chain}, nil
	}
	if opt.TopK > 0 {
		C.llama_sampler_chain_add(chain, C.llama_sampler_init_top_k(C.int32_t(opt.TopK)))
	}
	C.llama_sampler_chain_add(chain, C.llama_sampler_init_temp(C.float(opt.Temperature)))
	// NB: llama.cpp's dist sampler takes a 32-bit seed; fold the 64-bit one.
	C.llama_sampler_chain_add(chain, C.llama_sampler_init_dist(C.uint32_t(opt.Seed^(opt.Seed>>32))))
	return &Sampler{s: chain}, nil
}

// Sample picks a token from the last output row of c's last Decode and
// records it in the sampler's history.
func (s *Sampler) Sample(c *Context) int32 {
	return int32(C.llama_sampler_sample(s.s, c.ctx, -1))
}

// Close frees the sampler.
func (s *Sampler) Close() {
	if s.s != nil {
		C.llama_sampler_free(s.s)
		s.s = nil
	}
}
