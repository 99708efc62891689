package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPublishKinds: each kind reads its keys from the table in publish/,
// a key another kind reads is a warning, what a kind needs is an error at
// its line with the fix, and the WordPress password never shows.
func TestPublishKinds(t *testing.T) {
	e := fullEnv()
	e["WP_APP_PASSWORD"] = "abcd efgh ijkl mnop qrst uvwx"
	cfg, err := parseIn(t, "publish: {kind: hugo, dir: site, section: blog, bundle: true}\n"+twoLinks, e)
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Publish; p.Kind != "hugo" || p.Dir != filepath.Join(cfg.Dir, "site") || p.Section != "blog" || !p.Bundle {
		t.Errorf("hugo: %+v", p)
	}
	cfg, err = parseIn(t, "publish:\n  kind: wordpress\n  url: https://blog.example\n  user: editor\n  password_env: WP_APP_PASSWORD\n  status: future\n  delay: 2h\n"+twoLinks, e)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Publish
	if p.Kind != "wordpress" || p.URL != "https://blog.example" || p.User != "editor" || p.Password != e["WP_APP_PASSWORD"] || p.Status != "future" || p.Delay != 2*time.Hour {
		t.Errorf("wordpress: %#v %q", p, p.Password)
	}
	if o := p.Options(); o.Password != p.Password || o.URL != p.URL || o.Delay != p.Delay {
		t.Errorf("Options = %+v", o)
	}
	if s := fmt.Sprintf("%v %+v %#v %s", p, p, p, p); strings.Contains(s, "abcd") {
		t.Errorf("the password is printed: %s", s)
	}

	cfg, err = parseIn(t, "publish: {kind: jekyll, dir: site, section: blog, url: \"https://x\"}\n"+twoLinks, e)
	if err != nil {
		t.Fatal(err)
	}
	warned := strings.Join(cfg.Warnings, "\n")
	for _, w := range []string{":1: publish.section is ignored for kind jekyll", ":1: publish.url is ignored for kind jekyll"} {
		if !strings.Contains(warned, w) {
			t.Errorf("warnings %q lack %q", cfg.Warnings, w)
		}
	}

	for _, tc := range []struct {
		body, msg, fix string
		line           int
	}{
		{"publish:\n  kind: wordpress\n  url: https://blog.example\n", "publish: kind wordpress needs user", "Editor or Administrator", 1},
		{"publish:\n  kind: wordpress\n  url: https://blog.example\n  user: u\n", "publish: kind wordpress needs password_env", "Application Passwords", 1},
		{"publish:\n  kind: wordpress\n  url: https://blog.example\n  user: u\n  password_env: UNSET_WP\n", "publish.password_env: UNSET_WP is not set", "export UNSET_WP=", 5},
		{"publish:\n  kind: wordpress\n  url: ftp://blog.example\n  user: u\n  password_env: WP_APP_PASSWORD\n", "publish.url: not an http(s) URL", "https://", 3},
		{"publish:\n  kind: wordpress\n  url: https://b\n  user: u\n  password_env: WP_APP_PASSWORD\n  status: pending\n", `publish.status: unknown status "pending"`, "publish, draft or future", 6},
		{"publish:\n  kind: hugo\n  dir: site\n  section: ../up\n", "publish.section: must be a folder inside", "without ..", 4},
		{"publish:\n  kind: hugo\n  bundle: maybe\n", "publish.bundle: want true or false", "", 3},
	} {
		_, err := parseIn(t, tc.body+twoLinks, e)
		var errs Errors
		if !errors.As(err, &errs) {
			t.Errorf("%q: err = %v", tc.body, err)
			continue
		}
		found := false
		for _, ce := range errs {
			if strings.Contains(ce.Msg, tc.msg) && strings.Contains(ce.Fix, tc.fix) && ce.Line == tc.line {
				found = true
			}
		}
		if !found {
			t.Errorf("%q: errors %v, want %q (fix %q) at line %d", tc.body, err, tc.msg, tc.fix, tc.line)
		}
	}
}
