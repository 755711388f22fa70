// Package yamlnode holds the small helpers the project's YAML loaders
// (ttl.yml, the config file) share for walking go.yaml.in/yaml/v3 nodes and
// reporting problems with line numbers.
package yamlnode

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Deref follows an alias to the node it names.
func Deref(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// IsNull reports whether n is absent or an explicit null.
func IsNull(n *yaml.Node) bool {
	return n.Kind == 0 || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// KindName names what a node is, for error messages ("a mapping", "a list",
// "an integer"...).
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.DocumentNode:
		return "a document"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		switch tag := n.ShortTag(); tag {
		case "!!str":
			return "a string"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "null"
		default:
			return "a scalar tagged " + tag
		}
	}
	return "an unknown node"
}

// SyntaxLine splits a YAML parser error ("yaml: line 3: ...") into its line
// (0 when it names none) and its message.
func SyntaxLine(err error) (line int, msg string) {
	msg = strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, text, ok := strings.Cut(rest, ": "); ok {
			if n, err := strconv.Atoi(num); err == nil && n > 0 {
				return n, text
			}
		}
	}
	return 0, msg
}
