package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"go.yaml.in/yaml/v3"
)

var specPath = filepath.Join("..", "api", "openapi.yaml")

// TestOpenAPIRoutes checks that api/openapi.yaml lists exactly the routes
// the server registers, each with the path parameters of its pattern, the
// bearer security exactly where the server asks for the token, a request
// body exactly where the server decodes one, and the X-RTP-Request header
// and the 415 and 421 answers where the server may give them.
func TestOpenAPIRoutes(t *testing.T) {
	data, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	type param struct {
		Ref  string `yaml:"$ref"`
		Name string `yaml:"name"`
		In   string `yaml:"in"`
	}
	type operation struct {
		Security    []map[string][]string `yaml:"security"`
		RequestBody yaml.Node             `yaml:"requestBody"`
		Responses   map[string]yaml.Node  `yaml:"responses"`
		Parameters  []param               `yaml:"parameters"`
	}
	var spec struct {
		OpenAPI    string                          `yaml:"openapi"`
		Paths      map[string]map[string]yaml.Node `yaml:"paths"`
		Components struct {
			Parameters map[string]param `yaml:"parameters"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(spec.OpenAPI, "3.1") {
		t.Errorf("openapi = %q, want 3.1.x", spec.OpenAPI)
	}
	resolve := func(p param) param {
		if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
			return spec.Components.Parameters[name]
		}
		return p
	}
	var inSpec []string
	ops := map[string]operation{}
	for path, item := range spec.Paths {
		var common []param
		if n, ok := item["parameters"]; ok {
			if err := n.Decode(&common); err != nil {
				t.Fatal(err)
			}
		}
		for method, n := range item {
			if method == "parameters" {
				continue
			}
			var op operation
			if err := n.Decode(&op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			op.Parameters = append(op.Parameters, common...)
			pat := strings.ToUpper(method) + " " + path
			inSpec = append(inSpec, pat)
			ops[pat] = op
		}
	}
	var served []string
	for _, rt := range routes {
		served = append(served, rt.pattern())
	}
	slices.Sort(inSpec)
	slices.Sort(served)
	if !slices.Equal(inSpec, served) {
		t.Errorf("routes in %s:\n%s\nroutes served:\n%s", specPath, strings.Join(inSpec, "\n"), strings.Join(served, "\n"))
	}
	segment := regexp.MustCompile(`\{([^}]+)\}`)
	bodied := map[string]bool{
		"POST /v1/regions/{region}/teleports":             true,
		"POST /v1/regions/{region}/group-teleports":       true,
		"PUT /v1/regions/{region}/players/{player}/queue": true,
		"POST /v1/regions/{region}/network/reservations":  true,
		"POST /v1/worlds/{world}/claims":                  true,
		"POST /v1/worlds/{world}/changes":                 true,
	}
	for _, rt := range routes {
		op, ok := ops[rt.pattern()]
		if !ok {
			continue
		}
		var want, got []string
		for _, m := range segment.FindAllStringSubmatch(rt.path, -1) {
			want = append(want, m[1])
		}
		for _, p := range op.Parameters {
			if p = resolve(p); p.In == "path" {
				got = append(got, p.Name)
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(want, got) {
			t.Errorf("%s: path parameters %v in the spec, want %v", rt.pattern(), got, want)
		}
		secured := slices.ContainsFunc(op.Security, func(m map[string][]string) bool { _, ok := m["bearer"]; return ok })
		if secured != rt.needsAuth() {
			t.Errorf("%s: bearer security %v in the spec, needsAuth %v", rt.pattern(), secured, rt.needsAuth())
		}
		if hasBody := op.RequestBody.Kind != 0; hasBody != bodied[rt.pattern()] {
			t.Errorf("%s: request body in the spec %v, want %v", rt.pattern(), hasBody, bodied[rt.pattern()])
		}
		if rt.needsAuth() {
			if _, ok := op.Responses["401"]; !ok {
				t.Errorf("%s: no 401 answer in the spec", rt.pattern())
			}
		}
		if _, ok := op.Responses["421"]; !ok {
			t.Errorf("%s: no 421 answer in the spec", rt.pattern())
		}
		if mutating(rt.method) {
			if _, ok := op.Responses["415"]; !ok {
				t.Errorf("%s: no 415 answer in the spec", rt.pattern())
			}
			if !slices.ContainsFunc(op.Parameters, func(p param) bool { p = resolve(p); return p.In == "header" && p.Name == HeaderRequest }) {
				t.Errorf("%s: no %s header parameter in the spec", rt.pattern(), HeaderRequest)
			}
		}
		if bodied[rt.pattern()] {
			for _, code := range []string{"400", "413"} {
				if _, ok := op.Responses[code]; !ok {
					t.Errorf("%s: no %s answer in the spec", rt.pattern(), code)
				}
			}
		}
	}
}

// TestOpenAPIValid loads the spec with kin-openapi and validates it.
func TestOpenAPIValid(t *testing.T) {
	doc := loadSpec(t)
	if err := doc.Validate(t.Context()); err != nil {
		t.Fatalf("%s: %v", specPath, err)
	}
}

var (
	specOnce   sync.Once
	specDoc    *openapi3.T
	specRouter routers.Router
	specErr    error
)

func loadSpec(t testing.TB) *openapi3.T {
	t.Helper()
	specOnce.Do(func() {
		specDoc, specErr = openapi3.NewLoader().LoadFromFile(specPath)
		if specErr == nil {
			specRouter, specErr = legacy.NewRouter(specDoc)
		}
	})
	if specErr != nil {
		t.Fatalf("%s: %v", specPath, specErr)
	}
	return specDoc
}

// specChecked wraps h so that every request and answer through it is
// validated against api/openapi.yaml (see checkSpec).
func specChecked(t testing.TB, h http.Handler) http.Handler {
	loadSpec(t)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var reqBody []byte
		if r.Body != nil {
			reqBody, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(reqBody))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		checkSpec(t, r, reqBody, rec.Code, rec.Header(), rec.Body.Bytes())
	})
}

// checkSpec validates an answer, and the request of a 2xx answer, against
// api/openapi.yaml; a mismatch fails t. Requests the spec does not
// describe (no route) are not checked.
func checkSpec(t testing.TB, r *http.Request, reqBody []byte, status int, header http.Header, body []byte) {
	t.Helper()
	loadSpec(t)
	probe := r.Clone(context.Background())
	probe.Body = io.NopCloser(bytes.NewReader(reqBody))
	probe.URL.Scheme, probe.URL.Host = "http", "127.0.0.1:8080"
	route, params, err := specRouter.FindRoute(probe)
	if err != nil {
		return
	}
	in := &openapi3filter.RequestValidationInput{
		Request: probe, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s %s = %d %s: not as api/openapi.yaml says: %v", r.Method, r.URL.Path, status, body, err)
	}
	if status < 300 {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			t.Errorf("%s %s with %q was served, but api/openapi.yaml refuses the request: %v", r.Method, r.URL.Path, reqBody, err)
		}
	}
}
