package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rtpengine/rtp/ttl"
)

// Check reports what Validate reports and what only opening things shows,
// as a starting server would find it: each region's shape is built (a
// rotated rectangle can lose every chunk to its hole), the ttl.yml at
// TTLPath is loaded (a missing file is the defaults), the admin token
// file and the network secret files are read. Checks of a part that
// Validate already faults are skipped. Every problem is a *LineError;
// those of the ttl.yml name that file.
func (c *Config) Check() error {
	ps, errs := c.checkAll()
	return flatJoin(joinProblems(ps), errs)
}

// CheckFile loads the config file at path like LoadFile and, when it
// loads, checks it like Check, with lines.
func CheckFile(path string) (*Config, error) {
	c, d, err := loadFile(path)
	if err != nil {
		return nil, err
	}
	ps, errs := c.deepProblems(c.problems())
	d.report(ps)
	if err := flatJoin(d.err(), errs); err != nil {
		return nil, err
	}
	return c, nil
}

// flatJoin joins the errors joined in err and more into one flat list.
func flatJoin(err error, more []error) error {
	if err == nil {
		return errors.Join(more...)
	}
	return errors.Join(append(unjoin(err), more...)...)
}

func (c *Config) checkAll() ([]problem, []error) {
	ps := c.problems()
	deep, errs := c.deepProblems(ps)
	return append(ps, deep...), errs
}

// deepProblems runs the checks that open things, skipping those whose key
// already has a problem in shallow.
func (c *Config) deepProblems(shallow []problem) ([]problem, []error) {
	faulty := func(k keyPath) bool {
		for _, p := range shallow {
			if p.key.hasPrefix(k) || k.hasPrefix(p.key) {
				return true
			}
		}
		return false
	}
	var v validator
	var errs []error
	for _, name := range sortedKeys(c.Regions) {
		r := c.Regions[name]
		p := keyPath{"regions"}.name(name)
		if !faulty(p.key("shape")) {
			if _, err := r.BuildShape(); err != nil {
				for _, e := range unjoin(err) {
					v.add(p.key("shape"), nil, "%s", strings.TrimPrefix(e.Error(), "geom: "))
				}
			}
		}
		sk := p.key("sinks", "network", "secret_file")
		if r.Sinks.Network.Enabled && !faulty(sk) {
			if _, err := r.Sinks.Network.Secret(); err != nil {
				v.add(sk, nil, "%s", strings.TrimPrefix(err.Error(), "config: network secret_file: "))
			}
		}
	}
	if ak := (keyPath{"auth"}); !faulty(ak) && c.Auth.TokenFile != "" {
		if _, err := c.Auth.Resolve(); err != nil {
			v.add(ak.key("token_file"), nil, "%s", strings.TrimPrefix(err.Error(), "config: auth.token_file: "))
		}
	}
	if tk := (keyPath{"ttl_file"}); !faulty(tk) && c.TTLFile != "" {
		if _, err := ttl.LoadFileOrDefault(c.TTLPath()); err != nil {
			var le *ttl.LineError
			if errors.As(err, &le) {
				errs = append(errs, unjoin(err)...)
			} else {
				v.add(tk, nil, "%s", fmt.Sprint(strings.TrimPrefix(err.Error(), "ttl: ")))
			}
		}
	}
	return v.ps, errs
}

// unjoin returns the errors joined in err, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
