package server

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/rtpengine/rtp/api"
	"github.com/rtpengine/rtp/engine"
)

// fill sets every leaf of v (a pointer) to a non-zero value: numbers count
// up from *n, strings are "s<n>", maps and slices get one element,
// pointers a value, times a fixed instant plus n seconds.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)).Add(time.Duration(*n) * time.Second)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), n)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, n)
		fill(e, n)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("s" + strings.Repeat("x", *n%7))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Type() == reflect.TypeFor[time.Duration]() {
			v.SetInt(int64(*n) * int64(time.Millisecond))
			return
		}
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) / 1000) // fractions stay within [0, 1]
	}
}

// zeroLeaves lists the paths of the leaves of v left at their zero value.
func zeroLeaves(path string, v reflect.Value) []string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return []string{path}
		}
		return zeroLeaves(path, v.Elem())
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			if v.Interface().(time.Time).IsZero() {
				return []string{path}
			}
			return nil
		}
		var out []string
		for i := range v.NumField() {
			out = append(out, zeroLeaves(path+"."+v.Type().Field(i).Name, v.Field(i))...)
		}
		return out
	case reflect.Slice, reflect.Map:
		if v.Len() == 0 {
			return []string{path}
		}
		if v.Kind() == reflect.Slice {
			return zeroLeaves(path+"[0]", v.Index(0))
		}
		return nil
	}
	if v.IsZero() {
		return []string{path}
	}
	return nil
}

// fullEngineStats is an engine.Stats with every field set.
func fullEngineStats() engine.Stats {
	var st engine.Stats
	n := 0
	fill(reflect.ValueOf(&st).Elem(), &n)
	st.Region, st.World = "r", "w"
	st.Pipeline.Sinks[0].Kind = "general"
	return st
}

// TestStatsMapping checks that APIStats carries every field of the
// engine's stats: with all of them set, no field of the answer is left
// zero.
func TestStatsMapping(t *testing.T) {
	st := fullEngineStats()
	out := APIStats(st)
	if z := zeroLeaves("Stats", reflect.ValueOf(out)); len(z) > 0 {
		t.Errorf("APIStats leaves fields zero (not mapped from the engine's stats): %v", z)
	}
	if out.Latency.P50Ms != api.Ms(st.Latency.P50) || out.Watch.PeriodMs != api.Ms(st.Watch.Period) {
		t.Errorf("durations: latency %+v, watch period %v ms", out.Latency, out.Watch.PeriodMs)
	}
	if out.Memory.LastRebuild.Location() != time.UTC || out.Pipeline.RecentMisses[0].Time.Location() != time.UTC {
		t.Errorf("times not in UTC: %v, %v", out.Memory.LastRebuild, out.Pipeline.RecentMisses[0].Time)
	}
	// The answer does not share the engine's maps.
	for k := range out.Pipeline.ScreenRejections {
		out.Pipeline.ScreenRejections[k]++
		if st.Pipeline.ScreenRejections[k] == out.Pipeline.ScreenRejections[k] {
			t.Error("APIStats shares the engine's map")
		}
	}
}

// TestStatsJSONEmpty checks that the stats of a fresh region have [] and
// {} where the engine has nil, and no watch key without a watcher.
func TestStatsJSONEmpty(t *testing.T) {
	data, err := json.Marshal(APIStats(engine.Stats{Region: "r", World: "w"}))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if strings.Contains(s, "null") || strings.Contains(s, `"watch"`) || strings.Contains(s, `"lastRebuild"`) {
		t.Errorf("empty stats = %s, want no null, no watch, no lastRebuild", s)
	}
	for _, want := range []string{`"sinks":[]`, `"recentMisses":[]`, `"screenRejections":{}`, `"byCause":{}`, `"served":{}`, `"reservationFailures":{}`} {
		if !strings.Contains(s, want) {
			t.Errorf("empty stats lack %s: %s", want, s)
		}
	}
}

// TestStatsOpenAPI serves stats, empty and full, through the spec checker:
// the answers must validate against the Stats schema of api/openapi.yaml,
// whose objects refuse keys they do not list.
func TestStatsOpenAPI(t *testing.T) {
	f := newFake(t)
	s, err := New(f, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	h := specChecked(t, s.Handler())
	for _, name := range []string{"empty", "full"} {
		st := engine.Stats{Region: "r", World: "w"}
		if name == "full" {
			st = fullEngineStats()
		}
		f.mu.Lock()
		f.stats = &st
		f.mu.Unlock()
		a := do(t, h, "GET", "/v1/regions/r/stats", "")
		if a.status != 200 {
			t.Fatalf("%s stats = %d %s", name, a.status, a.body)
		}
		var got api.Stats
		dec := json.NewDecoder(strings.NewReader(string(a.body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("%s stats %s: %v", name, a.body, err)
		}
		if !reflect.DeepEqual(got, APIStats(st)) {
			t.Errorf("%s stats = %+v, want %+v", name, got, APIStats(st))
		}
	}
}

// TestOpenAPIShapes checks that the schemas of api/openapi.yaml name
// exactly the keys of package api's types, in both directions, recursively
// through $ref, arrays and maps, and that every answer object refuses
// keys it does not list (so that a drift fails the spec checks).
func TestOpenAPIShapes(t *testing.T) {
	doc := loadSpec(t)
	for name, v := range map[string]any{
		"Teleport": api.Teleport{}, "Reservation": api.Reservation{}, "Regions": api.Regions{},
		"Claims": api.Claims{}, "Stats": api.Stats{}, "Error": api.Error{},
	} {
		ref := doc.Components.Schemas[name]
		if ref == nil {
			t.Errorf("api/openapi.yaml has no schema %s", name)
			continue
		}
		compareShape(t, name, reflect.TypeOf(v), ref.Value, name == "Stats")
	}
}

func compareShape(t *testing.T, path string, typ reflect.Type, s *openapi3.Schema, strict bool) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch {
	case typ.Kind() == reflect.Slice:
		if s.Items == nil {
			t.Errorf("%s: a list in Go, no items in the spec", path)
			return
		}
		compareShape(t, path+"[]", typ.Elem(), s.Items.Value, strict)
		return
	case typ.Kind() == reflect.Map:
		if s.AdditionalProperties.Schema == nil {
			t.Errorf("%s: a map in Go, no additionalProperties schema in the spec", path)
		}
		return
	case typ.Kind() != reflect.Struct || typ == reflect.TypeFor[time.Time]():
		return
	}
	if strict && (s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has) {
		t.Errorf("%s: the spec's object does not refuse unknown keys (additionalProperties: false)", path)
	}
	var keys []string
	for f := range typ.Fields() {
		key, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if key == "-" || !f.IsExported() {
			continue
		}
		keys = append(keys, key)
		p := s.Properties[key]
		if p == nil {
			t.Errorf("%s: key %q of the Go type is not in the spec", path, key)
			continue
		}
		required := slices.Contains(s.Required, key)
		if optional := strings.Contains(opts, "omitempty"); optional == required {
			t.Errorf("%s: key %q required %v in the spec, omitempty %v in Go", path, key, required, optional)
		}
		compareShape(t, path+"."+key, f.Type, p.Value, strict)
	}
	for key := range s.Properties {
		if !slices.Contains(keys, key) {
			t.Errorf("%s: key %q of the spec is not in the Go type", path, key)
		}
	}
}
