package sweep

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/internal/atomicfile/atomictest"
	"github.com/lessim/lessim/internal/errgolden"
)

// killGrid is 36 points, slow enough (about 20-50 ms each) to be killed mid-way.
var killGrid = strings.NewReplacer("tokens: 24", "tokens: 80", "[1GiB, 2GiB]", "[1GiB, 1500MiB, 2GiB, 2500MiB, 3GiB, 4GiB]").Replace(testGrid)

// childEnv makes the test binary run killGrid into the folder it names
// instead of the tests (see TestMain).
const childEnv = "LESSIM_SWEEP_TEST_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		g, err := ParseGrid([]byte(killGrid), "kill.yaml")
		if err == nil {
			var pts []Point
			if pts, err = g.Expand(); err == nil {
				_, err = Run(context.Background(), g.Name, pts, Options{Out: dir, Version: "test", PartRows: 1, Workers: 2})
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(errgolden.Main(m))
}

// TestResumeAfterSIGKILL kills a sweep mid-way, reruns it, and checks that
// the rows equal an uninterrupted run's: every point once, same values.
func TestResumeAfterSIGKILL(t *testing.T) {
	killed, whole := t.TempDir(), t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+killed)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		parts, _ := Parts(killed)
		if len(parts) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the child wrote no parts")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	parts, _ := Parts(killed)
	before := len(rowSet(t, killed))
	t.Logf("killed after %d parts, %d rows", len(parts), before)
	if before >= 36 {
		t.Fatal("the child finished before it was killed: the test did not interrupt anything")
	}
	// A part being written at the kill leaves its temporary (the child
	// may have been between parts: plant one). Resumed later (backdated
	// past StaleAge), the run removes every such leftover.
	os.WriteFile(filepath.Join(killed, ".part-0-of-1-00099.parquet.tmp-1"), []byte("half a part"), 0o644)
	old := time.Now().Add(-2 * atomicfile.StaleAge)
	for _, tmp := range atomictest.Temporaries(t, killed) {
		os.Chtimes(tmp, old, old)
	}
	sum := runGrid(t, killGrid, killed, Options{PartRows: 4})
	atomictest.NoTemporaries(t, killed)
	if sum.Skipped != before || sum.Ran != 36-before {
		t.Errorf("resume: skipped %d ran %d, want %d and %d", sum.Skipped, sum.Ran, before, 36-before)
	}
	runGrid(t, killGrid, whole, Options{})
	a, b := rowSet(t, whole), rowSet(t, killed)
	if len(b) != 36 || !slices.Equal(a, b) {
		t.Errorf("resumed rows differ from an uninterrupted run (%d vs %d rows)", len(b), len(a))
	}
}
