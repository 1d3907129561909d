package devices

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lessim/lessim/internal/errgolden"
)

const gib = 1 << 30

// Reference: DESIGN.md "Reference model": one expert is 1,351,680 bytes in
// Q3_K, 1,769,472 in Q4_K, 2,039,808 on the Q4_K_M layers whose down
// projection is Q6_K: 0–4, every third from 7 to 34, 35–39.
func TestMiniCPMExpertBytes(t *testing.T) {
	q6Layers := []int{0, 1, 2, 3, 4}
	for b := 7; b <= 34; b += 3 {
		q6Layers = append(q6Layers, b)
	}
	q6Layers = append(q6Layers, 35, 36, 37, 38, 39)
	if len(q6Layers) != 20 {
		t.Fatalf("DESIGN lists 20 layers, got %d", len(q6Layers))
	}
	for _, tc := range []struct {
		variant string
		want    func(block int) int64
	}{
		{"q4_k_m", func(b int) int64 {
			if slices.Contains(q6Layers, b) {
				return 2_039_808
			}
			return 1_769_472
		}},
		{"mixed-q3k-experts", func(int) int64 { return 1_351_680 }},
	} {
		m, err := LookupModel(MiniCPMV47, tc.variant)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Layers) != 40 || m.Experts != 256 || m.TopK != 8 || m.Blocks != 40 {
			t.Fatalf("%s: shape %d layers, %d experts, top-%d", tc.variant, len(m.Layers), m.Experts, m.TopK)
		}
		for i, l := range m.Layers {
			if l.Block != i || l.ExpertBytes != tc.want(i) {
				t.Errorf("%s: layer %d (block %d) expert bytes %d, want %d", tc.variant, i, l.Block, l.ExpertBytes, tc.want(i))
			}
			var names []string
			for _, tn := range l.Tensors {
				names = append(names, tn.Name)
			}
			if !slices.Equal(names, []string{"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}) {
				t.Errorf("%s: layer %d tensors %v", tc.variant, i, names)
			}
			// Reference: 2 FLOPs per weight, 3 × 2048 × 512 weights per expert.
			if l.ExpertFLOPsPerToken != 2*3_145_728 {
				t.Errorf("%s: layer %d expert FLOPs %d", tc.variant, i, l.ExpertFLOPsPerToken)
			}
		}
	}
}

// Reference: DESIGN.md: routed experts about 12.9 GiB at Q3_K and 18.2 GiB at
// Q4_K_M, non-expert weights about 1.55 GiB, file 19.7 → 14.44 GiB; per
// token with nothing cached 320 expert reads, about 432 MB at Q3_K and 610 MB
// at Q4_K_M.
func TestMiniCPMTotals(t *testing.T) {
	for _, tc := range []struct {
		variant             string
		experts, file       float64 // GiB
		perTokenMB          float64
		defaultVariantFirst bool
	}{
		{"q4_k_m", 18.2, 19.7, 610, true},
		{"mixed-q3k-experts", 12.9, 14.44, 432, false},
	} {
		m, err := LookupModel(MiniCPMV47, tc.variant)
		if err != nil {
			t.Fatal(err)
		}
		near := func(what string, got, want, tol float64) {
			if math.Abs(got-want) > tol {
				t.Errorf("%s: %s = %.3f, want %.3f ± %.2f", tc.variant, what, got, want, tol)
			}
		}
		near("routed experts GiB", float64(m.TotalExpertBytes())/gib, tc.experts, 0.05)
		near("non-expert GiB", float64(m.NonExpertBytes)/gib, 1.55, 0.03)
		near("file GiB", float64(m.TotalExpertBytes()+m.NonExpertBytes)/gib, tc.file, 0.05)
		var perToken int64
		for _, l := range m.Layers {
			perToken += int64(m.TopK) * l.ExpertBytes
		}
		near("expert MB per token", float64(perToken)/1e6, tc.perTokenMB, 1)
		// Reference: output projection 248,320 × 2048 in Q6_K (llama.cpp's
		// Q4_K_M output type): 248,320 × 8 blocks × 210 B.
		if m.HeadBytes != 248_320*8*210 || m.HeadFLOPsPerToken != 2*248_320*2048 {
			t.Errorf("%s: head %d bytes, %d FLOPs", tc.variant, m.HeadBytes, m.HeadFLOPsPerToken)
		}
		// Reference: 10 full-attention layers × K,V × 2 heads × 256 × 2 B.
		if m.KVBytesPerToken != 20_480 {
			t.Errorf("%s: KV bytes per token %d, want 20480", tc.variant, m.KVBytesPerToken)
		}
	}
	def, _ := LookupModel(MiniCPMV47, "")
	q4, _ := LookupModel(MiniCPMV47, "q4_k_m")
	if !reflect.DeepEqual(def, q4) {
		t.Error("the default variant is not q4_k_m")
	}
}

// TestMiniCPMDense checks the dense layout: full attention on every 4th block
// and the resident parts every block has.
func TestMiniCPMDense(t *testing.T) {
	m, err := LookupModel(MiniCPMV47, "")
	if err != nil {
		t.Fatal(err)
	}
	// Reference: router 2048×256 F32 = 2 MiB; shared expert 3×2048×512 ≥ 1.7 MB in Q4_K.
	const floor = 2<<20 + 1_769_472
	for i, l := range m.Layers {
		if l.DenseBytes < floor || l.DenseBytes > 40<<20 {
			t.Errorf("layer %d dense bytes %d out of range", i, l.DenseBytes)
		}
		bpw := float64(l.DenseBytes) * 8 / (float64(l.DenseFLOPsPerToken) / 2)
		if bpw < 4.5 || bpw > 8 {
			t.Errorf("layer %d: %.2f bits per dense weight", i, bpw)
		}
	}
	// Gated DeltaNet blocks are heavier than full-attention ones here (about
	// 33.7M against 27.3M matrix weights).
	if m.Layers[3].DenseFLOPsPerToken >= m.Layers[2].DenseFLOPsPerToken {
		t.Errorf("full-attention block 3 has %d dense FLOPs, linear block 2 %d", m.Layers[3].DenseFLOPsPerToken, m.Layers[2].DenseFLOPsPerToken)
	}
}

// TestQwen3AgainstReferenceTrace compares qwen3-30b-a3b's layout with the
// per-layer expert and dense bytes in the reference trace's preamble
// (BigMoeOnEdge, github.com/Helldez/BigMoeOnEdge, Apache-2.0).
func TestQwen3AgainstReferenceTrace(t *testing.T) {
	path := filepath.Join("..", "..", "shared", "reference", "traces", "qwen.route.csv")
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("reference trace absent: %v", err)
	}
	defer f.Close()
	m, err := LookupModel(Qwen3_30BA3B, "")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	seen := 0
	for sc.Scan() && strings.HasPrefix(sc.Text(), "#") {
		var layer int
		var expert, dense int64
		if n, _ := fmt.Sscanf(sc.Text(), "# layer=%d expert_bytes=%d dense_bytes=%d", &layer, &expert, &dense); n != 3 {
			continue
		}
		seen++
		if layer >= len(m.Layers) {
			t.Fatalf("%s: layer %d beyond the spec's %d", path, layer, len(m.Layers))
		}
		if l := m.Layers[layer]; l.ExpertBytes != expert || l.DenseBytes != dense {
			t.Errorf("layer %d: spec expert %d dense %d, trace %d %d", layer, l.ExpertBytes, l.DenseBytes, expert, dense)
		}
	}
	if seen != 48 {
		t.Errorf("read %d layer lines, want 48", seen)
	}
}

func TestLookupModelErrors(t *testing.T) {
	if got := ModelNames(); !slices.Equal(got, []string{MiniCPMV47, Qwen3_30BA3B}) {
		t.Errorf("ModelNames() = %v", got)
	}
	if got := ModelVariants(MiniCPMV47); !slices.Equal(got, []string{"q4_k_m", "mixed-q3k-experts"}) {
		t.Errorf("ModelVariants = %v", got)
	}
	if ModelVariants("nope") != nil {
		t.Error("ModelVariants of an unknown model is not nil")
	}
	_, err := LookupModel("gpt-5", "")
	if err == nil || !strings.Contains(err.Error(), MiniCPMV47) || !strings.Contains(err.Error(), Qwen3_30BA3B) {
		t.Errorf("unknown model error %v does not list the models", err)
	}
	_, err = LookupModel(MiniCPMV47, "q8_0")
	errgolden.Check(t, "q4_k_m-mixed-q3k-experts", err)
}

// TestModelSpecJSONRoundTrip: trace metadata stores the spec as JSON.
func TestModelSpecJSONRoundTrip(t *testing.T) {
	for _, name := range ModelNames() {
		for _, v := range ModelVariants(name) {
			m, err := LookupModel(name, v)
			if err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			var back ModelSpec
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(&back, m) {
				t.Errorf("%s/%s: JSON round trip changed the spec", name, v)
			}
			if err := back.Validate(); err != nil {
				t.Errorf("%s/%s: %v", name, v, err)
			}
		}
	}
}

func TestModelSpecValidate(t *testing.T) {
	base := func() *ModelSpec {
		m, err := LookupModel(MiniCPMV47, "")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	tests := []struct {
		name   string
		mutate func(m *ModelSpec)
		want   []string // every substring must appear
	}{
		{"top_k above experts", func(m *ModelSpec) { m.TopK = 300 }, []string{"top_k: must be <= experts (got 300 > 256)"}},
		{"zero sizes", func(m *ModelSpec) { m.Hidden, m.ExpertFFN, m.Experts = 0, 0, 0 },
			[]string{"hidden: 0 is outside [1, 65536]", "expert_ffn: 0 is outside [1, 131072]", "experts: 0 is outside [1, 4096]"}},
		{"more layers than blocks", func(m *ModelSpec) { m.Blocks = 30 }, []string{"40 MoE layers but only 30 blocks", "layers[30].block: must be in [0,30)"}},
		{"blocks out of order", func(m *ModelSpec) { m.Layers[5].Block = 2 }, []string{"layers[5].block: must be greater than the previous layer's block 4"}},
		{"tensor sum mismatch", func(m *ModelSpec) { m.Layers[0].ExpertBytes++ }, []string{"layers[0].expert_bytes: is 2039809 but its tensors sum to 2039808"}},
		{"unknown tensor type", func(m *ModelSpec) { m.Layers[1].Tensors[0].Type = "Q9_K" }, []string{`layers[1].tensors[0].type: unknown quant type "Q9_K"`}},
		{"negative sizes", func(m *ModelSpec) { m.Layers[2].DenseBytes = -1; m.KVBytesPerToken = -1 },
			[]string{"layers[2].dense_bytes: -1 B is outside [0 B, 64 GiB]", "kv_bytes_per_token: -1 B is outside [0 B, 64 MiB]"}},
		{"non-expert too small", func(m *ModelSpec) { m.NonExpertBytes = 1 }, []string{"non_expert_bytes: 1 is less than"}},
		{"no layers", func(m *ModelSpec) { m.Layers = nil }, []string{"layers: 0 is outside [1, 1024] MoE layers"}},
		{"several at once", func(m *ModelSpec) { m.Name = ""; m.TopK = 0; m.SharedFFN = 0 },
			[]string{"name: missing", "top_k: 0 is outside [1, 64]", "shared_ffn: must be >= 1 with 1 shared experts"}},
	}
	for _, tc := range tests {
		m := base()
		tc.mutate(m)
		err := m.Validate()
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error\n%v\nlacks %q", tc.name, err, w)
			}
		}
		if n := strings.Count(err.Error(), "\n") + 1; n < len(tc.want) {
			t.Errorf("%s: %d problems reported, want at least %d", tc.name, n, len(tc.want))
		}
	}
	if err := base().Validate(); err != nil {
		t.Errorf("valid spec: %v", err)
	}
}

// TestRecordedProblems: a trace's spec may leave hidden, expert_ffn and its
// tensors' quant types unknown (an imported route trace records only bytes);
// everything else is checked as Validate checks it, without the name prefix.
func TestRecordedProblems(t *testing.T) {
	m, err := LookupModel(MiniCPMV47, "")
	if err != nil {
		t.Fatal(err)
	}
	m.Hidden, m.ExpertFFN = 0, 0
	for i := range m.Layers {
		for j := range m.Layers[i].Tensors {
			m.Layers[i].Tensors[j].Type = ""
		}
	}
	if ps := m.RecordedProblems(); ps != nil {
		t.Errorf("unrecorded shape: %q", ps)
	}
	if m.Validate() == nil {
		t.Error("Validate accepts an unstated shape")
	}
	m.Hidden, m.TopK = -1, 0
	m.Layers[3].ExpertBytes = 0
	ps := m.RecordedProblems()
	want := []string{"top_k: 0 is outside [1, 64]", "hidden: -1 is outside [1, 65536]", "layers[3].expert_bytes: 0 B is outside [16 B, 4 GiB]"}
	for _, w := range want {
		if !slices.ContainsFunc(ps, func(p string) bool { return strings.HasPrefix(p, w) }) {
			t.Errorf("problems %q lack one starting %q", ps, w)
		}
	}
}
