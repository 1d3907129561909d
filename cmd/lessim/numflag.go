package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/lessim/lessim/internal/numtext"
	"github.com/lessim/lessim/runtime/record"
)

// numFlag is a number flag of type T, read by parse (numtext, as
// experiment options are: pflag's own take NaN and Inf and report with
// strconv's words); its String and Type are pflag's.
type numFlag[T float32 | float64 | int | uint64] struct {
	p     *T
	parse func(string) (T, error)
	typ   string
}

func (f numFlag[T]) Set(s string) error {
	v, err := f.parse(s)
	if err == nil {
		*f.p = v
	}
	return err
}

func (f numFlag[T]) Type() string { return f.typ }

func (f numFlag[T]) String() string {
	switch v := any(*f.p).(type) {
	case float32:
		return strconv.FormatFloat(float64(v), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return fmt.Sprint(*f.p)
}

func numVar[T float32 | float64 | int | uint64](fl *pflag.FlagSet, p *T, name string, value T, usage, typ string, parse func(string) (T, error)) {
	*p = value
	fl.Var(numFlag[T]{p, parse, typ}, name, usage)
}

// floatVar defines a float64 flag that must be finite.
func floatVar(fl *pflag.FlagSet, p *float64, name string, value float64, usage string) {
	numVar(fl, p, name, value, usage, "float64", func(s string) (float64, error) { return numtext.Float(s, 64) })
}

// intVar defines an int flag.
func intVar(fl *pflag.FlagSet, p *int, name string, value int, usage string) {
	numVar(fl, p, name, value, usage, "int", func(s string) (int, error) {
		v, err := numtext.Int(s, strconv.IntSize)
		return int(v), err
	})
}

// specFlagNames are speculative decoding's flags (specFlags); the last,
// --draft-model, belongs to the host.
var specFlagNames = []string{"spec-block", "drafter", "spec-accept", "accept-seed", "draft-model"}

// specFlags defines speculative decoding's flags (live's and record's) into
// sp, with the usage of --spec-block and --accept-seed.
func specFlags(fl *pflag.FlagSet, sp *record.Speculative, blockUsage, seedUsage string) {
	intVar(fl, &sp.Block, "spec-block", 0, blockUsage)
	fl.StringVar(&sp.Drafter, "drafter", "", "speculative decoding's drafter: controlled (the target's own token with probability --spec-accept), ngram (prompt lookup) or model (--draft-model)")
	floatVar(fl, &sp.Accept, "spec-accept", 0, "controlled drafter: probability α that a draft is the target's own token")
	uint64Var(fl, &sp.Seed, "accept-seed", 1, seedUsage)
	fl.StringVar(&sp.DraftModel, "draft-model", "", "model drafter: a small GGUF with the target's vocabulary")
}

// uint64Var defines a uint64 flag.
func uint64Var(fl *pflag.FlagSet, p *uint64, name string, value uint64, usage string) {
	numVar(fl, p, name, value, usage, "uint64", func(s string) (uint64, error) { return numtext.Uint(s, 64) })
}
