package experiment

import "testing"

// TestParseNamed: named reports the groups the spec states itself, in a
// bare spec, in a result's JSON and behind a byte-order mark; Parse's
// defaults fill the others.
func TestParseNamed(t *testing.T) {
	for _, data := range []string{
		`{"device": {"name": "ufs4-phone-12gb"}, "policy": {"name": "lru"}}`,
		`{"spec": {"device": {"name": "ufs4-phone-12gb"}, "policy": {"name": "lru"}}}`,
		"\ufeff" + `{"device": {"name": "ufs4-phone-12gb"}, "policy": {"name": "lru"}}`,
	} {
		s, named, err := ParseNamed([]byte(data))
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if !named("device") || !named("policy") || named("model") || named("cache") {
			t.Errorf("%s: named device %v policy %v model %v cache %v; want device and policy only",
				data, named("device"), named("policy"), named("model"), named("cache"))
		}
		if s.Policy.Name != "lru" || s.Model == nil {
			t.Errorf("%s: policy %q, model %v: want lru and the default model", data, s.Policy.Name, s.Model)
		}
	}
	if _, _, err := ParseNamed([]byte(`{"policy": {"name": "lru"}, "nonsense": 1}`)); err == nil {
		t.Error("unknown field: no error")
	}
}
