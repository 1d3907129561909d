// Package throttle makes this machine behave more like a phone: it caps the read
// bandwidth of the block device that holds the model file and the memory (page
// cache included) of a process, with Linux cgroup v1 controllers.
//
// # Model
//
// Start creates one cgroup per controller, named lessim-<pid>-<n>, as a child of
// the cgroup the process is in now (so it never escapes limits set above it),
// writes the limits and moves the process (Options.PID, default this one) in:
//
//   - blkio.throttle.read_bps_device "<major>:<minor> <bytes/s>" on the whole
//     disk under the model file's file system (a partition is mapped to its disk
//     through /sys/dev/block). Verified here: 200 MB/s held O_DIRECT reads to
//     199.6 MiB/s (DESIGN.md). Buffered page-cache hits are not throttled: only
//     requests that reach the device are;
//   - memory.limit_in_bytes: the cgroup's RAM including the page cache it
//     charges, so the kernel reclaims the model's pages beyond it (pages already
//     cached before Start stay charged to the old cgroup).
//
// Close moves the process back to the cgroups it came from and removes the new
// ones; so do a failed Start, and SIGINT or SIGTERM while a throttle is active
// (after cleaning up, the signal is raised again with its default action, so the
// process still ends as the user asked). Start also removes leftovers of earlier
// runs killed with SIGKILL: empty lessim-<pid>-* cgroups whose process is gone.
//
// Where root or a cgroup v1 blkio/memory hierarchy is missing, or the file has no
// block device (tmpfs, overlay), Start returns an *UnavailableError saying why,
// so the caller runs unthrottled and says so.
//
// Units: bytes and bytes per second.
package throttle
