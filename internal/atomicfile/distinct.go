package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// CheckDistinct returns an error if out names the same file as one of
// inputs (empty ones skipped): the same absolute path, or os.SameFile.
func CheckDistinct(out string, inputs ...string) error {
	ao, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	ost, oerr := os.Stat(out)
	for _, in := range inputs {
		if in == "" {
			continue
		}
		ai, err := filepath.Abs(in)
		if err != nil {
			return err
		}
		same := ai == ao
		if !same && oerr == nil {
			if ist, err := os.Stat(in); err == nil {
				same = os.SameFile(ost, ist)
			}
		}
		if same {
			return fmt.Errorf("output %s is the input %s: refusing to overwrite an input (choose another output path)", out, in)
		}
	}
	return nil
}
