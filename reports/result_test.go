package reports

import (
	"strings"
	"testing"

	"github.com/lessim/lessim/sim"
)

// TestWriteResultUnmeasured: a measured run's fields it could not measure
// (zero in the Result) read "not measured", not 0; a simulated run's zeros
// read as zeros.
func TestWriteResultUnmeasured(t *testing.T) {
	r := &sim.Result{Source: sim.SourceMeasured, Tokens: 4, Passes: 4, TimeNS: 4e9, ComputeNS: 3e9, StallNS: 1e9, StallFlashNS: 1e9,
		FlashReads: 12, FlashBytes: 12 << 20, FlashBytesPerToken: 3 << 20,
		Unmeasured: []string{"flash_busy_ns", "stall_fault_cpu_ns"}}
	var b strings.Builder
	if err := WriteResult(&b, nil, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"stall 1.000 s (25.0%): flash wait 1.000 s, fault CPU not measured; demand reads queued 0.00 ms\n",
		"3.00 MiB/token   12 reads, 12.00 MiB total, busy not measured\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("measured result lacks %q:\n%s", want, b.String())
		}
	}
	r.Unmeasured, r.Source = nil, sim.SourceSimulated
	b.Reset()
	if err := WriteResult(&b, nil, r); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); strings.Contains(s, "not measured") || !strings.Contains(s, "fault CPU 0.00 ms") || !strings.Contains(s, "busy 0.0% of the time") {
		t.Errorf("simulated result:\n%s", s)
	}
}

// TestWriteResultUnmeasuredGroup: a stock live run measures neither its
// stall nor its flash reads: each reads as one "not measured", not the words
// after every label ("flash not measured not measured reads, not measured
// total").
func TestWriteResultUnmeasuredGroup(t *testing.T) {
	r := &sim.Result{Source: sim.SourceMeasured, Tokens: 4, Passes: 4, TimeNS: 4e9, ComputeNS: 4e9,
		Unmeasured: []string{"flash_busy_ns", "stall_fault_cpu_ns", "demand_queue_wait_ns", "flash_bytes", "flash_bytes_per_token", "flash_reads", "stall_flash_ns", "stall_ns"}}
	var b strings.Builder
	if err := WriteResult(&b, nil, r); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{"\ntime        compute 4.000 s  stall not measured\n", "\nflash       not measured\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("stock result lacks %q:\n%s", want, s)
		}
	}
	if strings.Count(s, "not measured") != 2 {
		t.Errorf("want two 'not measured', one per group:\n%s", s)
	}
}
