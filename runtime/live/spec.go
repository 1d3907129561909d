package live

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lessim/lessim/devices"
)

// ResolveCache is devices.ResolveCache for a run of the live engine on model
// m: a size ("256MiB") or a percentage of m's expert bytes ("25%"). A
// device's budget (auto) has no meaning for a run measured in this
// machine's page cache, so it is refused, and an error suggests only the
// forms a live run takes.
func ResolveCache(size string, m *devices.ModelSpec) (int64, error) {
	if strings.TrimSpace(size) == "auto" {
		return 0, errors.New("cache auto: a live run takes a size (256MiB) or a percentage of the expert bytes (25%), not a device's budget")
	}
	b, err := devices.ResolveCache(size, m, nil)
	if se := (*devices.CacheSizeError)(nil); errors.As(err, &se) {
		return 0, fmt.Errorf("cache %q: %v (write e.g. 256MiB or 25%%)", se.Size, se.Err)
	}
	if err != nil {
		return 0, err
	}
	return b, nil
}

// RoutingNote is the warning for a spec whose synthetic trace group states
// routing settings: the live engine's model routes.
const RoutingNote = "live engine: the spec's synthetic routing settings do not apply (the model routes); its decode tokens do"
