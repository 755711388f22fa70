package server

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestAdminTokenNeverPrints: the token shows as "[redacted]" through fmt,
// slog and JSON, alone and inside Options; Reveal returns it.
func TestAdminTokenNeverPrints(t *testing.T) {
	const secret = "hunter2-hunter2-hunter2"
	o := Options{Token: AdminToken(secret), MaxBodyBytes: 7}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("server", "token", o.Token, "opts", o)
	js, err := json.Marshal(struct{ Token AdminToken }{o.Token})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		fmt.Sprintf("%v", o), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", o), fmt.Sprintf("<%s>", o.Token),
		fmt.Sprintf("%q", o.Token), fmt.Sprintf("%x", o.Token), fmt.Sprint(o.Token),
		logged.String(), string(js),
	} {
		if strings.Contains(s, "hunter2") || strings.Contains(s, fmt.Sprintf("%x", "hunter2")) {
			t.Errorf("the token leaks: %s", s)
		}
		if !strings.Contains(s, redacted) && s != fmt.Sprintf("%x", redacted) {
			t.Errorf("%q does not say [redacted]", s)
		}
	}
	if o.Token.Reveal() != secret {
		t.Error("Reveal lost the token")
	}
	if AdminToken("").String() != "" || fmt.Sprint(AdminToken("")) != "" {
		t.Error("no token prints as non-empty")
	}
}
