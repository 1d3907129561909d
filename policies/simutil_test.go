package policies

import (
	"reflect"

	"github.com/lessim/lessim/sim"
)

// resultsEqual compares two Results field by field.
func resultsEqual(a, b *sim.Result) bool { return reflect.DeepEqual(a, b) }
