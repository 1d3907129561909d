//go:build linux

package residency

import (
	"strings"
	"testing"
)

func TestAlignment(t *testing.T) {
	const p = 4096
	cases := []struct {
		r, in, out Region
	}{
		{Region{0, 8192}, Region{0, 8192}, Region{0, 8192}},
		{Region{100, 8292}, Region{4096, 8192}, Region{0, 12288}},
		{Region{100, 4000}, Region{4096, 4096}, Region{0, 4096}}, // inside one page: nothing to evict
		{Region{4096, 4097}, Region{4096, 4096}, Region{4096, 8192}},
		{Region{34816, 69632}, Region{36864, 69632}, Region{32768, 69632}},
	}
	for _, c := range cases {
		if got := inward(c.r, p); got != c.in {
			t.Errorf("inward(%v) = %v, want %v", c.r, got, c.in)
		}
		if got := outward(c.r, p); got != c.out {
			t.Errorf("outward(%v) = %v, want %v", c.r, got, c.out)
		}
	}
	// 16 KiB pages (iOS, some Android phones): an expert aligned to 4 KiB
	// keeps only the pages wholly inside it.
	const p16 = 16384
	r := Region{4096, 53248}
	if in, out := inward(r, p16), outward(r, p16); in != (Region{16384, 49152}) || out != (Region{0, 65536}) {
		t.Errorf("16 KiB pages: inward %v, outward %v", in, out)
	}
}

func TestParseMaps(t *testing.T) {
	const maps = `55d0c0a00000-55d0c0a21000 r--p 00000000 fd:01 77 /usr/bin/x
7f0000000000-7f0000010000 r--s 00000000 fd:01 1234 /var/tmp/m.gguf
7f0000010000-7f0000030000 r--s 00010000 fd:01 1234 /var/tmp/m.gguf
7f0000030000-7f0000031000 r--s 00030000 fd:01 1234 /var/tmp/m.gguf
7f1000000000-7f1000001000 r--s 00000000 fd:01 1234 /var/tmp/m.gguf (deleted)
7f2000000000-7f2000001000 r--s 00000000 fd:02 1234 /other/m.gguf
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
`
	ms, err := parseMaps(strings.NewReader(maps), 0xfd, 1, 1234)
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{{0x7f0000000000, 0, 0x31000}, {0x7f1000000000, 0, 0x1000}}
	if len(ms) != len(want) {
		t.Fatalf("got %v, want %v", ms, want)
	}
	for i := range want {
		if ms[i] != want[i] {
			t.Errorf("mapping %d = %+v, want %+v", i, ms[i], want[i])
		}
	}
	if _, err := parseMaps(strings.NewReader("zz-10 r--s 0 fd:01 1 /x\n"), 0xfd, 1, 1); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad line: err = %v, want a positioned error", err)
	}
}
