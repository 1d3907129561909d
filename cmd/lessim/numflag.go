package main

import (
	"strconv"

	"github.com/spf13/pflag"

	"github.com/lessim/lessim/internal/numtext"
)

// Number flags. pflag's own report a malformed or out-of-range value with
// strconv's message ("strconv.ParseFloat: parsing ...: value out of
// range") and take NaN and Inf; these read every number flag of every
// command as experiment options do (numtext: "is not a finite number"),
// so one mistake has one wording. Their String and Type are pflag's, so
// help text is unchanged.

// floatVar defines a float64 flag that must be finite.
func floatVar(fl *pflag.FlagSet, p *float64, name string, value float64, usage string) {
	*p = value
	fl.Var((*floatFlag)(p), name, usage)
}

// intVar defines an int flag.
func intVar(fl *pflag.FlagSet, p *int, name string, value int, usage string) {
	*p = value
	fl.Var((*intFlag)(p), name, usage)
}

// uint64Var defines a uint64 flag.
func uint64Var(fl *pflag.FlagSet, p *uint64, name string, value uint64, usage string) {
	*p = value
	fl.Var((*uint64Flag)(p), name, usage)
}

type floatFlag float64

func (f *floatFlag) Set(s string) error {
	v, err := numtext.Float(s, 64)
	if err == nil {
		*f = floatFlag(v)
	}
	return err
}
func (f *floatFlag) String() string { return strconv.FormatFloat(float64(*f), 'g', -1, 64) }
func (f *floatFlag) Type() string   { return "float64" }

type intFlag int

func (n *intFlag) Set(s string) error {
	v, err := numtext.Int(s, strconv.IntSize)
	if err == nil {
		*n = intFlag(v)
	}
	return err
}
func (n *intFlag) String() string { return strconv.Itoa(int(*n)) }
func (n *intFlag) Type() string   { return "int" }

type uint64Flag uint64

func (n *uint64Flag) Set(s string) error {
	v, err := numtext.Uint(s, 64)
	if err == nil {
		*n = uint64Flag(v)
	}
	return err
}
func (n *uint64Flag) String() string { return strconv.FormatUint(uint64(*n), 10) }
func (n *uint64Flag) Type() string   { return "uint64" }
