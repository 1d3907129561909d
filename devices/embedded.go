package devices

import (
	"embed"
	"fmt"
	"path"
	"slices"
	"strings"
)

// profileFS holds the built-in device profiles, one YAML file per device.
//
//go:embed profiles/*.yaml
var profileFS embed.FS

// ProfileNames lists the built-in device profiles, sorted.
func ProfileNames() []string {
	entries, err := profileFS.ReadDir("profiles")
	if err != nil { // NB: cannot happen with an embedded directory
		return nil
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// LoadProfile parses and validates the built-in profile name. An unknown name
// is an error listing the valid ones.
func LoadProfile(name string) (*Profile, error) {
	names := ProfileNames()
	if !slices.Contains(names, name) {
		return nil, fmt.Errorf("unknown device %q (valid: %s; or pass a YAML file with --device-file)", name, strings.Join(names, ", "))
	}
	file := path.Join("profiles", name+".yaml")
	data, err := profileFS.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", name, err)
	}
	return ParseProfile(data, file)
}

// LoadDevice is LoadProfile followed by Profile.Device.
func LoadDevice(name string) (*Device, error) {
	p, err := LoadProfile(name)
	if err != nil {
		return nil, err
	}
	return p.Device()
}
