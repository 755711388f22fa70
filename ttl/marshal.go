package ttl

import (
	"bytes"
	"fmt"
	"io"

	yaml "go.yaml.in/yaml/v3"

	"github.com/rtpengine/rtp/memory"
)

// Marshal returns p as a ttl.yml that Load reads back to an equal Policy
// (see Equal). It writes a comment on the defaults, then the explicit
// entries: causes in memory.Cause order, verifiers sorted by name, each
// value in the canonical form of Duration.String. A nil Policy is written
// as the defaults.
func (p *Policy) Marshal() ([]byte, error) {
	var b bytes.Buffer
	if _, err := p.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteTo writes p to w as Marshal does; it implements io.WriterTo.
func (p *Policy) WriteTo(w io.Writer) (int64, error) {
	cw := countingWriter{w: w}
	enc := yaml.NewEncoder(&cw)
	enc.SetIndent(2)
	err := enc.Encode(p.node())
	if cerr := enc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return cw.n, fmt.Errorf("ttl: writing policy: %w", err)
	}
	return cw.n, nil
}

var header = fmt.Sprintf(`How long rtp remembers a rejected place, by cause and by verifier.
Values: -1 = permanent, 0 = never stored, or a duration such as 30d, 1d12h,
90m, 500ms or 20t (game ticks of 50ms); units w, d, h, m, s, t, ms.
Unlisted causes use the defaults: static causes -1, uniquePlacement %v,
safetyExternal %v, ungenerated %v, unreadable %v, transient causes 0.
A verifier without an entry uses safetyExternal.`, DefaultUniquePlacement, DefaultSafetyExternal, DefaultUngenerated, DefaultUnreadable)

func (p *Policy) node() *yaml.Node {
	if p == nil {
		p = Default()
	}
	root := &yaml.Node{Kind: yaml.MappingNode, HeadComment: header}
	var causes []*yaml.Node
	for c := range memory.NumCauses {
		if p.set[c] {
			causes = append(causes, str(memory.Cause(c).String()), durationValue(p.causes[c]))
		}
	}
	if causes != nil {
		root.Content = append(root.Content, str("causes"), &yaml.Node{Kind: yaml.MappingNode, Content: causes})
	}
	if names := p.Verifiers(); len(names) > 0 {
		verifiers := make([]*yaml.Node, 0, 2*len(names))
		for _, name := range names {
			verifiers = append(verifiers, str(name), durationValue(p.verifiers[name]))
		}
		root.Content = append(root.Content, str("verifiers"), &yaml.Node{Kind: yaml.MappingNode, Content: verifiers})
	}
	return &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}
}

func str(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// durationValue writes -1 and 0 as integers and the rest as plain strings.
func durationValue(d Duration) *yaml.Node {
	n := str(d.String())
	if d <= 0 {
		n.Tag = "!!int"
	}
	return n
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
