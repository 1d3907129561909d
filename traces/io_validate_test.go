package traces

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestValidate lists, per edit of a valid step, every problem Validate must
// report (in order) — or none.
func TestValidate(t *testing.T) {
	meta := ioTestMeta(ioShape{layers: 3, experts: 8, topK: 2, hidden: 4, depth: 2, logits: true, routerInputs: true})
	good := func() Step {
		s := Step{Seq: 1, Pos: 7, Phase: Decode, Pass: 9, Layers: make([]LayerStep, 3)}
		for i := range s.Layers {
			s.Layers[i] = LayerStep{Experts: []int32{int32(i), 7}, Weights: []float32{0.5, 0.5}}
		}
		s.Layers[0].Lookahead = [][]float32{make([]float32, 8), make([]float32, 8)}
		s.Layers[1].Lookahead = [][]float32{make([]float32, 8)}
		s.Layers[2].Logits = make([]float32, 8)
		s.Layers[2].RouterInput = make([]float32, 4)
		return s
	}
	cases := []struct {
		name string
		edit func(*Step)
		want []string // "" layer prefix for step-level problems
	}{
		{"valid", func(*Step) {}, nil},
		{"valid with null depth inside", func(s *Step) { s.Layers[0].Lookahead[0] = nil }, nil},
		{"valid with unknown pass", func(s *Step) { s.Pass = -1 }, nil},
		{"step fields", func(s *Step) { s.Seq, s.Pos, s.Phase, s.Pass = -1, -2, 3, -5 }, []string{
			"seq -1 is negative", "pos -2 is negative", "phase 3 invalid (0 prefill, 1 decode, 2 rejected draft)", "pass -5 invalid (-1 means unknown)"}},
		{"layer count", func(s *Step) { s.Layers = s.Layers[:2] }, []string{"has 2 layers, want 3"}},
		{"experts", func(s *Step) { s.Layers[1].Experts = []int32{8, -1, 2, 2} }, []string{
			"layer 1: 4 experts selected, the model (io-test) routes each token to 2", "layer 1: expert 8 out of range [0,8)", "layer 1: expert -1 out of range [0,8)", "layer 1: expert 2 selected twice", "layer 1: 2 weights for 4 experts"}},
		{"no experts (a layer the prefill did not route)", func(s *Step) { s.Phase = Prefill; s.Layers[2].Experts, s.Layers[2].Weights = nil, nil }, nil},
		{"no experts in decode", func(s *Step) { s.Layers[1].Experts, s.Layers[1].Weights = []int32{}, nil }, []string{
			"layer 1: a decode token routes no experts (a decode pass routes every MoE layer)"}},
		{"too many experts", func(s *Step) { s.Layers[2].Experts, s.Layers[2].Weights = []int32{0, 1, 2, 3, 4, 5, 6, 7, 0}, nil }, []string{
			"layer 2: 9 experts selected, the model (io-test) routes each token to 2", "layer 2: expert 0 selected twice"}},
		{"duplicates are per layer", func(s *Step) { s.Layers[1].Experts = []int32{0, 7} }, nil},
		{"hit length", func(s *Step) { s.Layers[0].Hit = []bool{true} }, []string{"layer 0: 1 hit flags for 2 experts"}},
		{"vector lengths", func(s *Step) {
			s.Layers[2].Logits = make([]float32, 9)
			s.Layers[2].RouterInput = make([]float32, 3)
			s.Layers[0].Lookahead[1] = make([]float32, 2)
		}, []string{"layer 0: lookahead depth 2 has 2 scores, want 8", "layer 2: 9 logits, want 8", "layer 2: router input has 3 values, want hidden size 4"}},
		{"lookahead past the last layer", func(s *Step) { s.Layers[1].Lookahead = append(s.Layers[1].Lookahead, make([]float32, 8)) }, []string{
			"layer 1: lookahead depth 2 scores layer 3, past the last MoE layer 2"}},
		{"too deep", func(s *Step) { s.Layers[0].Lookahead = append(s.Layers[0].Lookahead, nil) }, []string{
			"layer 0: 3 lookahead depths, the trace meta says lookahead_depth 2"}},
		{"negative compute", func(s *Step) { s.Layers[0].ComputeNS = -1 }, []string{"layer 0: compute_ns -1 is negative"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := good()
			c.edit(&s)
			err := Validate(meta, &s)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var se *StepError
			if !errors.As(err, &se) {
				t.Fatalf("error %v, want a *StepError", err)
			}
			want := fmt.Sprintf("token (seq %d, pos %d): %s", s.Seq, s.Pos, strings.Join(c.want, "; "))
			if err.Error() != want {
				t.Fatalf("error\n got %q\nwant %q", err, want)
			}
		})
	}

	// Absent optional vectors are rejected when the meta says they are absent.
	bare := ioTestMeta(ioShape{layers: 3, experts: 8, topK: 2})
	s := good()
	err := Validate(bare, &s)
	for _, w := range []string{"layer 0: 2 lookahead depths, the trace meta says lookahead_depth 0", "layer 2: has logits but the trace meta says has_logits false", "layer 2: has a router input but the trace meta says has_router_inputs false"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v lacks %q", err, w)
		}
	}
}

// TestValidateCapsProblems checks that a garbage step yields a bounded
// message that still counts what it left out.
func TestValidateCapsProblems(t *testing.T) {
	meta := ioTestMeta(ioShape{layers: 2, experts: 4, topK: 2})
	s := Step{Layers: make([]LayerStep, 2)}
	for i := range s.Layers {
		s.Layers[i].Experts = []int32{9, 9, 9, 9, 9, 9, 9}
	}
	var se *StepError
	if !errors.As(Validate(meta, &s), &se) {
		t.Fatal("no StepError")
	}
	if len(se.Problems) != maxStepProblems || se.More != 2+14-maxStepProblems {
		t.Fatalf("%d problems kept, %d more; want %d kept, %d more", len(se.Problems), se.More, maxStepProblems, 2+14-maxStepProblems)
	}
	if !strings.HasSuffix(se.Error(), "; and 8 more problems") {
		t.Fatalf("error %q lacks the count of problems left out", se)
	}
}

// TestSliceSourceAndReadAll checks the in-memory Source and that ReadAll's
// copies do not alias the source's buffers.
func TestSliceSourceAndReadAll(t *testing.T) {
	var empty sliceSource
	if empty.Next() || empty.Step() != nil || empty.Err() != nil {
		t.Fatal("empty source yields a step")
	}
	m := ioTestMeta(ioShape{layers: 3, experts: 8, topK: 2, hidden: 2, depth: 2, logits: true, routerInputs: true})
	steps := ioTestSteps(rand.New(rand.NewPCG(13, 13)), m, 5, true)
	steps[0].Layers[0].Lookahead = [][]float32{make([]float32, 8)}
	src := NewSliceSource(steps)
	for i := 0; src.Next(); i++ {
		if src.Step() != &steps[i] {
			t.Fatalf("step %d is not &steps[%d]", i, i)
		}
	}
	got, err := ReadAll(NewSliceSource(steps))
	if err != nil {
		t.Fatal(err)
	}
	if d := ioDiff(got, steps); d != "" {
		t.Fatal(d)
	}
	got[0].Layers[0].Experts[0] = 99
	got[0].Layers[0].Lookahead[0][0] = 99
	if steps[0].Layers[0].Experts[0] == 99 || steps[0].Layers[0].Lookahead[0][0] == 99 {
		t.Fatal("ReadAll's copy aliases the source")
	}
}
