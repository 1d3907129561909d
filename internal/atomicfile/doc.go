// Package atomicfile writes files that cannot half-happen: every file lessim
// writes (traces, GGUF models, plots) goes through it.
//
// # The write protocol
//
// A write goes to a temporary file in the target's folder (named
// ".NAME.tmp-RANDOM", so it is on the same file system and the rename cannot
// cross devices). Commit syncs the temporary (fsync), gives it the target's
// mode, renames it over the target (rename(2) is atomic on POSIX file
// systems: a reader sees the old file or the new one, never a mix) and syncs
// the folder so the rename itself survives a power cut. On any error before
// the rename (a write error such as a full disk, a failed sync, the caller's
// own error) the temporary is removed and whatever was at the target is
// untouched. An existing target keeps its permission bits; a new one gets
// 0644. A symlink target is resolved and the file it points to is replaced.
// A target that exists and is not a regular file (a folder, a device such as
// /dev/null) is refused: renaming over it would replace the device node.
//
// # Signals
//
// A process killed while writing would leave its temporaries behind, so the
// package keeps a registry of live temporaries. HandleSignals, called once by
// lessim's main before cobra parses the command line, catches SIGINT, SIGTERM
// and SIGHUP: on the first one it takes the registry's lock (from then on no
// temporary can be created or renamed into place), removes every live
// temporary, restores the signal's default action and re-raises it, so the
// process ends as killed by that signal (exit status 130 for SIGINT in a
// shell) and the files at the targets are the old ones. Tests that call the
// command in-process (run(args, stdout, stderr)) do not install the handler;
// commands therefore never see SIGINT themselves while it is installed: a
// command that wants to stop gracefully on a signal must not rely on
// signal.NotifyContext (the handler ends the process first), and can call
// RemoveTemporaries from its own handler instead of HandleSignals.
//
// # Inputs and outputs
//
// CheckDistinct refuses an output path that names one of the command's
// inputs (same cleaned absolute path, or the same file through a link), so
// `trace import x.csv --out x.csv` fails before anything is read or written.
//
// # Free space
//
// CheckSpace refuses, before anything is created, a write whose expected
// size exceeds the free space of the target's file system (a *SpaceError),
// so a write that cannot fit fails at once instead of when the disk is full.
// The free space comes from a FreeFunc passed in, FreeSpace for the real
// one (statfs(2): the blocks available to unprivileged users, on Linux and
// macOS; elsewhere unknown, and an unknown free space refuses nothing); the
// size is asked for only when the free space is known.
package atomicfile
