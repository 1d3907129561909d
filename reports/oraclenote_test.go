package reports

import "testing"

// Wherever a plot shows the oracle, its caption says what the oracle is.
func TestOracleNote(t *testing.T) {
	for _, tc := range []struct {
		labels []string
		want   bool
	}{
		{[]string{"lru", "oracle"}, true},
		{[]string{"oracle, cache 3.00 GiB"}, true},
		{[]string{"lru", "les"}, false},
		{[]string{"oracles"}, false},
	} {
		got := oracleNote(tc.labels)
		if (got == " "+OracleNote) != tc.want || (got == "") == tc.want {
			t.Errorf("%q: note %q, want shown=%v", tc.labels, got, tc.want)
		}
	}
}
