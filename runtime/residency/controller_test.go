//go:build linux

package residency

import (
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/lessim/lessim/runtime/gguf"
)

// boundary is the most pages an evicted expert may keep: two partial pages per region.
func boundary(c *Controller, e Expert) float64 {
	_, total, _ := c.ResidentPages(e)
	return float64(2*len(c.layout.Regions(e))) / float64(total)
}

func TestLoadEvictResident(t *testing.T) {
	for _, arch := range []string{"qwen3moe", "olmoe"} {
		t.Run(arch, func(t *testing.T) {
			path, layout := synthModel(t, diskDir(t), smallOptions(arch))
			data := mapFile(t, path)
			m, err := FindMapping(path)
			if err != nil {
				t.Fatal(err)
			}
			if m.Addr != uintptr(unsafe.Pointer(&data[0])) || m.Offset != 0 || m.Len < int64(len(data)) {
				t.Fatalf("FindMapping = %+v, want our mapping at %p of %d bytes", m, &data[0], len(data))
			}
			c, err := OpenMapping(path, layout, m)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if len(layout.Regions(Expert{0, 0})) != 3 {
				t.Fatalf("regions = %v, want gate, up, down", layout.Regions(Expert{0, 0}))
			}
			e := Expert{Layer: 2, Index: 5}
			if f, _ := c.Resident(e); f != 1 {
				t.Fatalf("after touching the mapping, resident %v, want 1", f)
			}
			if err := c.EvictAll(); err != nil {
				t.Fatal(err)
			}
			if f, _ := c.Resident(e); f > boundary(c, e) {
				t.Skipf("the file system of %s keeps pages after POSIX_FADV_DONTNEED (resident %.2f): cannot test eviction here", path, f)
			}
			for l := range layout.Layers {
				for x := range layout.Experts {
					if f, _ := c.Resident(Expert{l, x}); f > boundary(c, Expert{l, x}) {
						t.Errorf("after EvictAll %v resident %.3f, want at most the boundary pages %.3f", Expert{l, x}, f, boundary(c, Expert{l, x}))
					}
				}
			}
			// Inward eviction leaves the dense tensors alone.
			f, _ := gguf.Open(path)
			norm, _ := f.Tensor("blk.2.ffn_norm.weight")
			f.Close()
			if b, _ := c.ResidentBytes(Region{norm.FileOffset, norm.End()}); b == 0 {
				t.Errorf("EvictAll evicted the dense tensor %s", norm.Name)
			}

			n, err := c.Load(e, nil)
			if err != nil {
				t.Fatal(err)
			}
			if n != layout.Bytes(e.Layer) {
				t.Errorf("Load read %d bytes, want the expert's %d", n, layout.Bytes(e.Layer))
			}
			if f, _ := c.Resident(e); f != 1 {
				t.Errorf("after Load resident %.3f, want 1", f)
			}
			other := Expert{Layer: 2, Index: 9}
			if f, _ := c.Resident(other); f > boundary(c, other) {
				t.Errorf("loading %v made %v resident %.3f", e, other, f)
			}
			// The engine's view: reading through the mapping needs no I/O now.
			r := layout.Regions(e)[1]
			_ = data[r.Start] + data[r.End-1]

			if err := c.Evict(e); err != nil {
				t.Fatal(err)
			}
			if f, _ := c.Resident(e); f > boundary(c, e) {
				t.Errorf("after Evict resident %.3f, want at most %.3f", f, boundary(c, e))
			}
		})
	}
}

func TestControllerErrors(t *testing.T) {
	dir := diskDir(t)
	path, layout := synthModel(t, dir, smallOptions("qwen3moe"))
	if _, err := FindMapping(path); err == nil || !strings.Contains(err.Error(), "not mapped") {
		t.Errorf("FindMapping of an unmapped file: err = %v", err)
	}
	if _, err := Open(path); err == nil {
		t.Error("Open of an unmapped file: no error")
	}
	if _, err := OpenMapping(path, layout, Mapping{Addr: 0x10000, Offset: 0, Len: 4096}); err == nil || !strings.Contains(err.Error(), "does not cover") {
		t.Errorf("short mapping: err = %v", err)
	}
	data := mapFile(t, path)
	c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = data
	for _, e := range []Expert{{-1, 0}, {4, 0}, {0, 16}, {0, -1}} {
		if _, err := c.Load(e, nil); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("Load(%v): err = %v", e, err)
		}
		if err := c.Evict(e); err == nil {
			t.Errorf("Evict(%v): no error", e)
		}
		if _, err := c.Resident(e); err == nil {
			t.Errorf("Resident(%v): no error", e)
		}
	}
	// A file without experts.
	notMoE := dir + "/dense.gguf"
	w := gguf.NewWriter()
	w.AddKV("general.architecture", "llama")
	w.AddTensor("token_embd.weight", gguf.TypeF32, []int64{4, 4}, make([]byte, 64))
	if err := w.WriteFile(notMoE); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(notMoE)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := NewLayout(f); err == nil || !strings.Contains(err.Error(), "no MoE layers") {
		t.Errorf("non-MoE file: err = %v", err)
	}
	if _, err := os.Stat(notMoE); err != nil {
		t.Fatal(err)
	}
}
