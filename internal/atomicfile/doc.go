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
// # Output folders
//
// A command that writes a folder of files that belong together (validate's
// trace, fit series, table, results and plots) writes them through a
// Stage: into a hidden staging folder beside the output folder
// (".NAME.tmp-RANDOM", on the same file system), registered like a
// temporary. Commit moves each file into the output folder by a rename
// (creating the folder if needed) and syncs the folders; any error before
// Commit, or Abort, or a signal removes the staging folder, so a failed or
// interrupted run leaves the output folder as it was, absent if it was
// absent.
//
// # Signals
//
// A process killed while writing would leave its temporaries behind, so the
// package keeps a registry of live temporaries and staging folders.
// HandleSignals, called once by lessim's main before cobra parses the
// command line, catches SIGINT, SIGTERM and SIGHUP. A command that stops
// cleanly on its own (live, validate, calibrate: they close an engine or an
// agent connection) takes its context from NotifyContext: the first signal
// only cancels that context; the command returns, its writes aborted on
// their error paths, and main ends the process with Exit(Interrupted()).
// In every other case (a command without such a context, a second signal)
// the handler acts at once: it takes the registry's lock (from then on no
// temporary can be created or renamed into place), removes every live
// temporary and staging folder, says so (HandleSignals' notice: lessim
// prints "lessim: interrupted"), restores the signal's default action and
// re-raises it, so the process ends as killed by that signal (exit status
// 130 for SIGINT in a shell, 143 for SIGTERM) and the files at the targets
// are the old ones. Exit does the same. Tests that call the command
// in-process (run(args, stdout, stderr)) do not install the handler. A
// command that handles signals wholly by itself (the agent, which writes
// nothing and ends with status 0) uninstalls the handler.
//
// # Leftovers of a killed writer
//
// Nothing runs when a process is killed by SIGKILL or the power goes, so
// its temporaries and staging folders stay. A writer holds an exclusive
// lock (flock(2)) on each of them until it commits or aborts, and the
// system drops the lock when the process dies. The next write of the same
// target (Create, NewStage; a sweep's run for its parts) removes each
// leftover of that target that is unlocked and unchanged for StaleAge
// (RemoveStale): a live writer's, in this process or another, is never
// touched. Without file locks (Windows) leftovers stay.
//
// # Checks before a write
//
// CheckDistinct refuses an output path that names one of the command's
// inputs (`trace import x.csv --out x.csv`), and CheckSpace a write whose
// expected size exceeds the free space of the target's file system
// (statfs(2) on Linux and macOS; elsewhere unknown, which refuses nothing),
// before anything is read or written.
package atomicfile
