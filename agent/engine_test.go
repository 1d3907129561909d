package agent

import (
	"context"
	"errors"
	"testing"
)

// TestSupports: an engine in this process takes a host group (CapHost)
// and what it announces, and is refused the rest with ErrInvalidSpec
// naming the capability: the simulator measures no series.
func TestSupports(t *testing.T) {
	e := newTestEngine(t, 0)
	if err := Supports(e, CapHost, CapRun, CapRecord); err != nil {
		t.Errorf("in-process simulator: %v", err)
	}
	if err := Supports(e, CapSeries); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("series on the simulator: %v, want ErrInvalidSpec", err)
	}
	if _, _, err := RunSeriesOn(context.Background(), e, []byte(testSpec)); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("RunSeriesOn on the simulator: %v, want ErrInvalidSpec", err)
	}
}

// TestRecordOn: an engine here records through Recorder, checked as a
// client's record is (the decode tokens asked for).
func TestRecordOn(t *testing.T) {
	e := newTestEngine(t, 0)
	if _, err := e.LoadModel(context.Background(), "qwen3-30b-a3b"); err != nil {
		t.Fatal(err)
	}
	tr, err := RecordOn(context.Background(), e, 6)
	if err != nil {
		t.Fatal(err)
	}
	if tr.DecodeTokens != 6 || tr.Meta.Model.Name == "" || len(tr.Parquet) == 0 {
		t.Errorf("recorded %d decode tokens of %q (%d bytes)", tr.DecodeTokens, tr.Meta.Model.Name, len(tr.Parquet))
	}
}
