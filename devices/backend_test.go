package devices

import (
	"bytes"
	"strings"
	"testing"
)

// TestBackend: the optional backend and compute.gpu_sync go together (gpu
// needs the sync cost, cpu refuses it), a bad name is refused, and absent
// means cpu with no sync and one compute thread.
func TestBackend(t *testing.T) {
	base := boundsProfile(nil) // backend gpu, gpu_sync 50 us, threads 4
	d, err := mustDevice(t, base)
	if err != nil {
		t.Fatal(err)
	}
	if d.Backend != BackendGPU || d.GPUSyncNS != 50_000 || d.Threads() != 4 || d.Flash.ReadAheadAsyncBytes != 128<<10 {
		t.Errorf("resolved backend %q sync %d threads %d async %d", d.Backend, d.GPUSyncNS, d.Threads(), d.Flash.ReadAheadAsyncBytes)
	}
	cases := []struct{ from, to, want string }{
		{"backend: {value: gpu", "backend: {value: npu", `backend: "npu" is not a backend (valid: cpu, gpu)`},
		{"backend: {value: gpu", "backend: {value: cpu", "compute.gpu_sync: applies only with backend gpu"},
		{"  gpu_sync: {value: \"50 us\", source: \"assumed: test\"}\n", "", "compute.gpu_sync: missing: backend gpu needs"},
		{`backend: {value: gpu, source: "assumed: test"}`, `backend: {value: gpu, source: ""}`, "backend: missing source"},
	}
	for _, c := range cases {
		y := bytes.Replace(base, []byte(c.from), []byte(c.to), 1)
		if bytes.Equal(y, base) {
			t.Fatalf("edit %q did not apply", c.from)
		}
		_, err := ParseProfile(y, "b.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s: got %v, want %q", c.from, c.to, err, c.want)
		}
	}
	// Without backend, gpu_sync, threads and read_ahead_async: cpu, one thread, no async.
	y := base
	for _, cut := range []string{"backend: {value: gpu, source: \"assumed: test\"}\n", "  gpu_sync: {value: \"50 us\", source: \"assumed: test\"}\n",
		"  threads: {value: \"4\", source: \"assumed: test\"}\n", "  read_ahead_async: {value: \"128 KiB\", source: \"assumed: test\"}\n"} {
		n := bytes.Replace(y, []byte(cut), nil, 1)
		if bytes.Equal(n, y) {
			t.Fatalf("cut %q did not apply", cut)
		}
		y = n
	}
	d, err = mustDevice(t, y)
	if err != nil {
		t.Fatal(err)
	}
	if d.Backend != "" || d.GPUSyncNS != 0 || d.ComputeThreads != 0 || d.Threads() != 1 || d.Flash.ReadAheadAsyncBytes != 0 {
		t.Errorf("absent: backend %q sync %d threads %d/%d async %d", d.Backend, d.GPUSyncNS, d.ComputeThreads, d.Threads(), d.Flash.ReadAheadAsyncBytes)
	}
}

func mustDevice(t *testing.T, y []byte) (*Device, error) {
	t.Helper()
	p, err := ParseProfile(y, "b.yaml")
	if err != nil {
		return nil, err
	}
	return p.Device()
}
