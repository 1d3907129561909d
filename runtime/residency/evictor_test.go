//go:build linux

package residency

import (
	"testing"
)

// TestEvictor: evictions handed over run off the caller's thread, in order;
// Wait(x) returns once x's eviction ran; a load after it is not undone by it;
// Drain waits for all; after Close evictions run on the caller's thread.
func TestEvictor(t *testing.T) {
	path, layout := synthModel(t, diskDir(t), smallOptions("qwen3moe"))
	mapFile(t, path)
	m, err := FindMapping(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := OpenMapping(path, layout, m)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, b := Expert{Layer: 1, Index: 3}, Expert{Layer: 2, Index: 7}
	if err := c.EvictAll(); err != nil { // syncs the new file, so its pages can be dropped
		t.Fatal(err)
	}
	for _, x := range []Expert{a, b} {
		if _, err := c.Load(x, nil); err != nil {
			t.Fatal(err)
		}
		if f, _ := c.Resident(x); f != 1 {
			t.Fatalf("%v loaded: resident %v, want 1", x, f)
		}
	}
	ev := NewEvictor(c)
	for _, x := range []Expert{a, b} {
		if err := ev.Evict(x); err != nil {
			t.Fatal(err)
		}
	}
	ev.Wait(a)
	if f, _ := c.Resident(a); f > boundary(c, a) {
		t.Skipf("the file system of %s keeps pages after POSIX_FADV_DONTNEED (resident %.2f): cannot test eviction here", path, f)
	}
	if _, err := c.Load(a, nil); err != nil { // a load after a's eviction ran: it stays
		t.Fatal(err)
	}
	if err := ev.Drain(); err != nil {
		t.Fatal(err)
	}
	if f, _ := c.Resident(a); f != 1 {
		t.Errorf("a loaded after its eviction: resident %v, want 1", f)
	}
	if f, _ := c.Resident(b); f > boundary(c, b) {
		t.Errorf("b evicted: resident %v, want at most %v", f, boundary(c, b))
	}
	if n := ev.Evicted(); n != 2 {
		t.Errorf("evicted %d, want 2", n)
	}
	if err := ev.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ev.Evict(a); err != nil { // closed: on this thread
		t.Fatal(err)
	}
	if f, _ := c.Resident(a); f > boundary(c, a) {
		t.Errorf("after Close, Evict ran synchronously? a resident %v", f)
	}
	if err := ev.Evict(Expert{Layer: 99}); err == nil {
		t.Error("an expert outside the model was evicted without error")
	}
}
