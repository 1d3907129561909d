package progress

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// fakeClock advances by step on every reading.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time { c.t = c.t.Add(c.step); return c.t }

// TestPlainLines: off a terminal, 10,000 updates over 100 s of (fake) time
// give at most one line per 5 s, no carriage return, and a final line.
func TestPlainLines(t *testing.T) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Unix(0, 0), step: 10 * time.Millisecond}
	b := New(&buf, 10_000, "recording", Options{Unit: "tok", Now: clk.now})
	for range 10_000 {
		b.Add(1)
	}
	b.Finish()
	b.Finish()
	out := buf.String()
	if strings.ContainsRune(out, '\r') {
		t.Fatalf("carriage return in non-terminal output:\n%q", out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	// 100 s at one line per 5 s is 20 lines, plus the final one.
	if len(lines) < 2 || len(lines) > 21 {
		t.Fatalf("%d lines, want 2..21:\n%s", len(lines), out)
	}
	if !strings.HasPrefix(lines[0], "recording: 500/10000 tok (5%), 100 tok/s") {
		t.Errorf("first line %q", lines[0])
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "recording: done, 10000/10000 tok (100%)") {
		t.Errorf("last line %q", last)
	}
}

// TestShortRunSilent: a run shorter than the interval prints nothing.
func TestShortRunSilent(t *testing.T) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Unix(0, 0), step: time.Millisecond}
	b := New(&buf, 100, "x", Options{Now: clk.now})
	for range 100 {
		b.Add(1)
	}
	b.Finish()
	if buf.Len() != 0 {
		t.Errorf("short run printed %q", buf.String())
	}
}

func TestQuietAndNil(t *testing.T) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Unix(0, 0), step: time.Hour}
	b := New(&buf, 10, "x", Options{Quiet: true, Now: clk.now})
	if b != nil {
		t.Fatal("a quiet bar should be nil")
	}
	b.Add(5)
	b.Set(10)
	b.Finish()
	if buf.Len() != 0 {
		t.Errorf("quiet bar printed %q", buf.String())
	}
}

// TestUnknownTotal: no total, no percentage.
func TestUnknownTotal(t *testing.T) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Unix(0, 0), step: 6 * time.Second}
	b := New(&buf, 0, "steps", Options{Now: clk.now})
	b.Add(7)
	if got := buf.String(); got != "steps: 7, 1/s\n" {
		t.Errorf("got %q", got)
	}
}

// TestTerminal: forced terminal mode draws a redrawn bar (carriage returns),
// and a buffer or a regular file is not a terminal.
func TestTerminal(t *testing.T) {
	var buf bytes.Buffer
	yes := true
	b := New(&buf, 3, "rec", Options{Terminal: &yes})
	for range 3 {
		b.Add(1)
	}
	b.Finish()
	if !strings.ContainsRune(buf.String(), '\r') {
		t.Errorf("terminal bar without redraws: %q", buf.String())
	}
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(&buf) || IsTerminal(f) {
		t.Error("a buffer or a regular file detected as a terminal")
	}
}
