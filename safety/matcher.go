package safety

import (
	"fmt"
	"slices"
	"strings"
)

// DefaultNamespace is the namespace of a rule or block name without one.
const DefaultNamespace = "minecraft"

// Matcher is one compiled rule: it matches block states (or, for biome
// rules, biome names) by name pattern, tag and property predicates.
//
// A Matcher is immutable and safe for concurrent use. The zero value
// matches nothing.
type Matcher struct {
	rule  string     // canonical text
	alts  []alt      // the name alternatives (a tag gives several)
	props []propPred // predicates every match must satisfy
}

// alt is one name alternative with its own predicates (a tag member such
// as campfire[lit=true]).
type alt struct {
	ns, path string // glob patterns ('*' matches any run of characters)
	props    []propPred
}

// propPred is key=v1|v2 or key!=v1|v2.
type propPred struct {
	key    string
	values []string
	negate bool
}

// SyntaxError is a rule that does not parse. Offset is the byte offset in
// the rule where the problem was found.
type SyntaxError struct {
	Rule   string
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("safety: rule %q: offset %d: %s", e.Rule, e.Offset, e.Msg)
}

// ParseMatcher compiles a block rule. The grammar (see the package
// documentation):
//
//	rule   = ( name | "#" tag ) [ "[" [ pred { "," pred } ] "]" ]
//	name   = [ namespace ":" ] path          (namespace defaults to minecraft)
//	pred   = key ( "=" | "!=" ) value { "|" value }
//
// Names may contain '*' globs ("*_leaves", "*:*"). Tags come from the
// built-in table (Tags). A block name the game does not have is not an
// error: it simply never matches.
func ParseMatcher(rule string) (*Matcher, error) {
	return parseRule(rule, blockTags, true)
}

// ParseBiomeMatcher compiles a biome rule: a name or glob with an optional
// namespace, or a built-in biome tag (BiomeTags), without properties.
func ParseBiomeMatcher(rule string) (*Matcher, error) {
	return parseRule(rule, biomeTags, false)
}

// String returns the rule in canonical form (namespace spelled out).
func (m *Matcher) String() string { return m.rule }

// Match reports whether the block state name ("minecraft:water[level=0]",
// as world.BlockID documents it) matches. Match parses name: it is for
// compiling lookup tables, not for a hot path.
func (m *Matcher) Match(name string) bool {
	return m.matchState(parseState(name))
}

func (m *Matcher) matchState(st state) bool {
	if len(m.alts) == 0 || !matchProps(m.props, st.props) {
		return false
	}
	for _, a := range m.alts {
		if glob(a.ns, st.ns) && glob(a.path, st.path) && matchProps(a.props, st.props) {
			return true
		}
	}
	return false
}

func matchProps(preds []propPred, props []prop) bool {
	for _, p := range preds {
		v, ok := lookupProp(props, p.key)
		in := ok && slices.Contains(p.values, v)
		if in == p.negate {
			return false
		}
	}
	return true
}

// state is a parsed block state or biome name.
type state struct {
	ns, path string
	props    []prop
}

type prop struct{ key, value string }

func lookupProp(props []prop, key string) (string, bool) {
	for _, p := range props {
		if p.key == key {
			return p.value, true
		}
	}
	return "", false
}

// parseState splits a block state name leniently: names come from world
// data and are never rejected. Without a namespace the default applies.
func parseState(name string) state {
	var st state
	base := name
	if i := strings.IndexByte(name, '['); i >= 0 {
		base = name[:i]
		body := strings.TrimSuffix(name[i+1:], "]")
		for kv := range strings.SplitSeq(body, ",") {
			k, v, _ := strings.Cut(kv, "=")
			if k = strings.TrimSpace(k); k != "" {
				st.props = append(st.props, prop{k, strings.TrimSpace(v)})
			}
		}
	}
	if ns, path, ok := strings.Cut(base, ":"); ok {
		st.ns, st.path = ns, path
	} else {
		st.ns, st.path = DefaultNamespace, base
	}
	return st
}

// glob reports whether s matches pattern, where '*' matches any run of
// characters (including none) and every other byte matches itself.
func glob(pattern, s string) bool {
	// Greedy matching with backtracking to the last star: each star
	// restarts the match at most len(s) times, so this is O(len(p)*len(s)).
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// parser is a recursive-descent parser over one rule.
type parser struct {
	src   string
	pos   int
	props bool // properties allowed
	tags  map[string][]string
	depth int // tag nesting while expanding the built-in table
}

func (p *parser) errf(at int, format string, args ...any) error {
	return &SyntaxError{Rule: p.src, Offset: at, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

func (p *parser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func isNameByte(c byte, glob bool) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/' ||
		glob && c == '*'
}

// token reads a run of name bytes, reporting upper case and other stray
// characters as errors when what is empty.
func (p *parser) token(what string, glob bool) (string, error) {
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos], glob) {
		p.pos++
	}
	if p.pos > start {
		return p.src[start:p.pos], nil
	}
	return "", p.unexpected(what)
}

func (p *parser) unexpected(what string) error {
	if p.pos >= len(p.src) {
		return p.errf(p.pos, "expected %s, found the end of the rule", what)
	}
	c := p.src[p.pos]
	if c >= 'A' && c <= 'Z' {
		return p.errf(p.pos, "expected %s, found upper-case %q (names are lower case)", what, c)
	}
	return p.errf(p.pos, "expected %s, found %q", what, c)
}

func parseRule(rule string, tags map[string][]string, props bool) (*Matcher, error) {
	p := &parser{src: rule, props: props, tags: tags}
	m, err := p.rule()
	if err != nil {
		return nil, err
	}
	return m, nil
}

func (p *parser) rule() (*Matcher, error) {
	p.skipSpace()
	m := &Matcher{}
	var canon strings.Builder
	if p.peek() == '#' {
		at := p.pos
		p.pos++
		name, err := p.token("a tag name after #", false)
		if err != nil {
			return nil, err
		}
		if p.peek() == ':' {
			if name != DefaultNamespace {
				return nil, p.errf(at+1, "tags are built in and live in namespace %s, not %s", DefaultNamespace, name)
			}
			p.pos++
			if name, err = p.token("a tag name after the namespace", false); err != nil {
				return nil, err
			}
		}
		members, ok := p.tags[name]
		if !ok {
			return nil, p.errf(at, "unknown tag #%s (known: %s)", name, tagList(p.tags))
		}
		if p.depth > 8 {
			return nil, p.errf(at, "tag #%s nests too deeply", name)
		}
		for _, member := range members {
			sub := &parser{src: member, props: true, tags: p.tags, depth: p.depth + 1}
			sm, err := sub.rule()
			if err != nil {
				// The built-in table is tested; this is a programming error.
				panic(fmt.Sprintf("safety: built-in tag #%s: %v", name, err))
			}
			for _, a := range sm.alts {
				a.props = append(slices.Clip(a.props), sm.props...)
				m.alts = append(m.alts, a)
			}
		}
		canon.WriteString("#" + name)
	} else {
		first, err := p.token("a block name or #tag", true)
		if err != nil {
			return nil, err
		}
		a := alt{ns: DefaultNamespace, path: first}
		if p.peek() == ':' {
			p.pos++
			path, err := p.token("a name after the namespace", true)
			if err != nil {
				return nil, err
			}
			a.ns, a.path = first, path
			if p.peek() == ':' {
				return nil, p.errf(p.pos, "a name has at most one ':'")
			}
		}
		m.alts = []alt{a}
		canon.WriteString(a.ns + ":" + a.path)
	}
	p.skipSpace()
	if p.peek() == '[' {
		if !p.props {
			return nil, p.errf(p.pos, "properties are not allowed here")
		}
		preds, text, err := p.predicates()
		if err != nil {
			return nil, err
		}
		m.props = preds
		canon.WriteString(text)
	}
	p.skipSpace()
	if p.pos < len(p.src) {
		return nil, p.errf(p.pos, "unexpected %q after the rule", p.src[p.pos])
	}
	m.rule = canon.String()
	return m, nil
}

// predicates parses "[k=v,k!=a|b]" and returns them with their canonical
// text.
func (p *parser) predicates() ([]propPred, string, error) {
	open := p.pos
	p.pos++ // '['
	var preds []propPred
	var canon strings.Builder
	canon.WriteByte('[')
	p.skipSpace()
	if p.peek() == ']' {
		p.pos++
		return nil, "", nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.src) {
			return nil, "", p.errf(open, "unclosed '[' (missing ']')")
		}
		key, err := p.token("a property name", false)
		if err != nil {
			return nil, "", err
		}
		p.skipSpace()
		var pr propPred
		pr.key = key
		switch {
		case strings.HasPrefix(p.src[p.pos:], "!="):
			pr.negate = true
			p.pos += 2
		case p.peek() == '=':
			p.pos++
		default:
			return nil, "", p.unexpected("'=' or '!=' after " + key)
		}
		for {
			p.skipSpace()
			v, err := p.token("a value for "+key, false)
			if err != nil {
				return nil, "", err
			}
			pr.values = append(pr.values, v)
			p.skipSpace()
			if p.peek() != '|' {
				break
			}
			p.pos++
		}
		if len(preds) > 0 {
			canon.WriteByte(',')
		}
		canon.WriteString(pr.key)
		if pr.negate {
			canon.WriteString("!=")
		} else {
			canon.WriteByte('=')
		}
		canon.WriteString(strings.Join(pr.values, "|"))
		preds = append(preds, pr)
		switch p.peek() {
		case ',':
			p.pos++
		case ']':
			p.pos++
			canon.WriteByte(']')
			return preds, canon.String(), nil
		case 0:
			return nil, "", p.errf(open, "unclosed '[' (missing ']')")
		default:
			return nil, "", p.unexpected("',' or ']'")
		}
	}
}

func tagList(tags map[string][]string) string {
	names := make([]string, 0, len(tags))
	for n := range tags {
		names = append(names, "#"+n)
	}
	slices.Sort(names)
	return strings.Join(names, " ")
}
