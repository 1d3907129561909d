//go:build llamacpp

package main

import (
	"strconv"

	"github.com/spf13/pflag"

	"github.com/lessim/lessim/internal/numtext"
)

// The float32 number flag, used only by record (a llama.cpp build).

// float32Var defines a float32 flag that must be finite.
func float32Var(fl *pflag.FlagSet, p *float32, name string, value float32, usage string) {
	*p = value
	fl.Var((*float32Flag)(p), name, usage)
}

type float32Flag float32

func (f *float32Flag) Set(s string) error {
	v, err := numtext.Float(s, 32)
	if err == nil {
		*f = float32Flag(v)
	}
	return err
}
func (f *float32Flag) String() string { return strconv.FormatFloat(float64(*f), 'g', -1, 32) }
func (f *float32Flag) Type() string   { return "float32" }
