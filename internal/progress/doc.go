// Package progress reports how far a long command has got, in a way that
// suits where its output goes.
//
// On a terminal a Bar is a live progress bar (github.com/schollz/progressbar)
// redrawn in place with carriage returns. Anywhere else (a file, a pipe, a CI
// log) carriage-return frames would pile up as garbage, so a Bar writes a
// plain line ("recording: 1200/5000 tok (24%), 310 tok/s") at most once per
// Options.Interval (5 s by default), and a last line at Finish only if it
// wrote any before; a run shorter than the interval prints nothing. With
// Options.Quiet a Bar prints nothing at all. The clock is Options.Now, so
// tests drive it without sleeping.
//
// Commands create one Bar per long loop:
//
//	bar := progress.New(cmd.ErrOrStderr(), total, "recording", progress.Options{Quiet: quiet, Unit: "tok"})
//	for ... { work(); bar.Add(1) }
//	bar.Finish()
package progress
