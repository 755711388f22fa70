package anvil

import "testing"

// FuzzParseDimensionFile: a dimension file never panics the decoder, and
// what it accepts is a resource id or a type the game would accept.
func FuzzParseDimensionFile(f *testing.F) {
	for _, s := range []string{
		`{"type": "minecraft:the_nether", "generator": {}}`,
		`{"type": "the_end"}`,
		`{"type": {"has_ceiling": true, "logical_height": 128}}`,
		`{"type": 7}`, `{"type": "../x"}`, `{"type": ""}`, `[]`, `{"type": {"height": 1e9}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		id, inline, err := parseDimensionFile(data)
		switch {
		case err != nil:
			if id != "" || inline != nil {
				t.Fatalf("error %v with a result %q %+v", err, id, inline)
			}
		case inline != nil:
			if id != "" || inline.Height < 16 || inline.LogicalHeight > inline.Height {
				t.Fatalf("inline type %+v, id %q", inline, id)
			}
		default:
			if got, err := parseID(id); err != nil || got != id {
				t.Fatalf("type id %q: %q, %v", id, got, err)
			}
		}
	})
}
