package cli

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestReadmeCommands holds the README's command table to the command tree:
// every command a user can run has a row, every command a row names
// exists, and every long flag a row shows is a flag of its command.
func TestReadmeCommands(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n## Commands\n")
	if !ok {
		t.Fatal("README.md has no Commands section")
	}
	table, _, _ = strings.Cut(table, "\n## ")

	root := newRootCmd(io.Discard, io.Discard)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	documented := map[*cobra.Command]bool{}
	span := regexp.MustCompile("`(rtp[^`]*)`")
	flag := regexp.MustCompile(`--([a-z][a-z0-9-]*)`)
	rows := 0
	for line := range strings.SplitSeq(table, "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `rtp") || len(cells) < 2 {
			continue
		}
		rows++
		for _, m := range span.FindAllStringSubmatch(cells[0], -1) {
			cmds, rest := resolve(root, strings.Fields(m[1])[1:])
			if len(cmds) == 0 {
				t.Errorf("README row %q: %q names no command", cells[0], m[1])
				continue
			}
			for _, c := range cmds {
				if c != root && !c.Runnable() {
					t.Errorf("README row %q: %s is not a command one runs (a subcommand is missing or misspelt)", m[1], c.CommandPath())
				}
				documented[c] = true
				for _, f := range flag.FindAllStringSubmatch(strings.Join(rest, " "), -1) {
					if c.Flags().Lookup(f[1]) == nil && c.InheritedFlags().Lookup(f[1]) == nil {
						t.Errorf("README row %q: %s has no flag --%s", m[1], c.CommandPath(), f[1])
					}
				}
			}
		}
	}
	if rows < 10 {
		t.Fatalf("README's command table has %d rows, want the whole table", rows)
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		if !c.HasSubCommands() && !documented[c] {
			t.Errorf("README's command table lacks %q", c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// resolve follows the words of a README command line down the tree. A word
// may list alternatives (`reset\|pause\|resume`); the walk stops at the first
// word that is not a subcommand. It returns the commands named (several
// for alternatives; the root for `rtp --version`) and the words left.
func resolve(root *cobra.Command, words []string) ([]*cobra.Command, []string) {
	cmds := []*cobra.Command{root}
	for i, w := range words {
		var next []*cobra.Command
		for _, c := range cmds {
			for _, alt := range strings.Split(w, `\|`) {
				for _, s := range c.Commands() {
					if s.Name() == alt {
						next = append(next, s)
					}
				}
			}
		}
		if len(next) == 0 || len(next) != len(cmds)*len(strings.Split(w, `\|`)) {
			return cmds, words[i:]
		}
		cmds = next
	}
	return cmds, nil
}
