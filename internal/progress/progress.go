package progress

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// DefaultInterval is the least time between two plain progress lines.
const DefaultInterval = 5 * time.Second

// Options tune a Bar; the zero value is a bar that draws on a terminal and
// writes a plain line every DefaultInterval elsewhere.
type Options struct {
	Quiet    bool             // print nothing
	Unit     string           // unit of the counts, e.g. "tok" ("" prints none)
	Interval time.Duration    // least time between plain lines (0: DefaultInterval)
	Now      func() time.Time // clock (nil: time.Now)
	// Terminal overrides terminal detection: nil detects it from the writer
	// (an *os.File, or anything with Fd, on a terminal per x/term).
	Terminal *bool
}

// Bar reports the progress of one loop of total units. A nil *Bar is valid
// and prints nothing. A Bar is not safe for concurrent use.
type Bar struct {
	w        io.Writer
	total    int64
	label    string
	o        Options
	done     int64
	start    time.Time
	last     time.Time // last plain line
	lines    int       // plain lines written
	tty      *progressbar.ProgressBar
	finished bool
}

// New returns a Bar writing to w for a loop of total units (total ≤ 0:
// unknown) labelled label.
func New(w io.Writer, total int64, label string, o Options) *Bar {
	if o.Quiet || w == nil {
		return nil
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	now := o.Now()
	b := &Bar{w: w, total: total, label: label, o: o, start: now, last: now}
	tty := o.Terminal
	if tty == nil {
		tty = new(IsTerminal(w))
	}
	if *tty {
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(label),
			progressbar.OptionShowCount(), progressbar.OptionThrottle(200 * time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		}
		if o.Unit != "" {
			opts = append(opts, progressbar.OptionShowIts(), progressbar.OptionSetItsString(o.Unit))
		}
		max := total
		if max <= 0 {
			max = -1
		}
		b.tty = progressbar.NewOptions64(max, opts...)
	}
	return b
}

// Lazy is a Bar for a callback that learns the total with the progress:
// set opens the Bar of total units at its first call and records done;
// finish finishes it (Bar.Finish).
func Lazy(w io.Writer, label string, o Options) (set func(done, total int64), finish func()) {
	var b *Bar
	return func(done, total int64) {
		if b == nil {
			b = New(w, total, label, o)
		}
		b.Set(done)
	}, func() { b.Finish() }
}

// IsTerminal reports whether w is a terminal (a file descriptor x/term
// recognises as one).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// Add records n more units done.
func (b *Bar) Add(n int64) {
	if b == nil {
		return
	}
	b.Set(b.done + n)
}

// Set records done units done in all.
func (b *Bar) Set(done int64) {
	if b == nil || b.finished {
		return
	}
	b.done = done
	if b.tty != nil {
		b.tty.Set64(done)
		return
	}
	now := b.o.Now()
	if now.Sub(b.last) >= b.o.Interval {
		b.last = now
		b.line(now, "")
	}
}

// Finish ends the bar: on a terminal the bar is completed and the line
// ended; elsewhere a last line is written if any was. Finish twice, or on a
// nil Bar, does nothing.
func (b *Bar) Finish() {
	if b == nil || b.finished {
		return
	}
	b.finished = true
	if b.tty != nil {
		if b.total > 0 && b.done < b.total {
			fmt.Fprintln(b.w) // an unfinished bar: end its line, do not fake 100%
			return
		}
		b.tty.Finish()
		return
	}
	if b.lines > 0 {
		b.line(b.o.Now(), "done, ")
	}
}

// line writes one plain progress line.
func (b *Bar) line(now time.Time, prefix string) {
	unit := ""
	if b.o.Unit != "" {
		unit = " " + b.o.Unit
	}
	s := fmt.Sprintf("%s: %s%d", b.label, prefix, b.done)
	if b.total > 0 {
		s += fmt.Sprintf("/%d%s (%d%%)", b.total, unit, b.done*100/b.total)
	} else {
		s += unit
	}
	if el := now.Sub(b.start).Seconds(); el > 0 {
		s += fmt.Sprintf(", %.0f%s/s", float64(b.done)/el, unit)
	}
	fmt.Fprintln(b.w, s)
	b.lines++
}
