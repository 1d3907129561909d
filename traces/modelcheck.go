package traces

import (
	"fmt"
	"os"
	"strconv"

	"github.com/lessim/lessim/devices"
)

// ModelDiffers says how the trace at path is not of model m, the model
// file at modelPath ("" when it is): a different shape (MoE layers,
// experts, top-k, each layer's expert bytes), or, when the trace was
// recorded (record stores the model file's size and sha256 in its info,
// FileSHA256), a different file. Its error is the trace's, unreadable.
func ModelDiffers(path string, m *devices.ModelSpec, modelPath string) (string, error) {
	r, err := Open(path)
	if err != nil {
		return "", err
	}
	meta := r.Meta()
	r.Close()
	if why := shapeDiffers(&meta.Model, m); why != "" {
		return why, nil
	}
	return fileDiffers(meta.Info, modelPath), nil
}

// shapeDiffers says how trace model t differs from model m in what the
// simulation reads ("" when it does not).
func shapeDiffers(t, m *devices.ModelSpec) string {
	shape := func(x *devices.ModelSpec) string {
		return fmt.Sprintf("%d MoE layers × %d experts, top-%d", len(x.Layers), x.Experts, x.TopK)
	}
	if shape(t) != shape(m) {
		return fmt.Sprintf("the trace's model %s has %s, this model %s", t.Name, shape(t), shape(m))
	}
	for i := range t.Layers {
		if a, b := t.Layers[i].ExpertBytes, m.Layers[i].ExpertBytes; a != b {
			return fmt.Sprintf("MoE layer %d's experts are %d bytes in the trace's model %s, %d in this model", i, a, t.Name, b)
		}
	}
	return ""
}

// fileDiffers compares a recorded trace's model file (its size, then its
// sha256) with the file at path; "" when they agree or the trace does not
// say (a synthetic or imported trace).
func fileDiffers(info map[string]string, path string) string {
	sum := info["model_sha256"]
	if sum == "" {
		return ""
	}
	if size, err := strconv.ParseInt(info["model_size"], 10, 64); err == nil {
		if st, err := os.Stat(path); err == nil && st.Size() != size {
			return fmt.Sprintf("the trace was recorded on a %d-byte model file, this one has %d bytes", size, st.Size())
		}
	}
	got, err := FileSHA256(path)
	if err != nil {
		return err.Error()
	}
	if got != sum {
		return fmt.Sprintf("the trace was recorded on a model file with sha256 %.12s…, this one has %.12s…", sum, got)
	}
	return ""
}
