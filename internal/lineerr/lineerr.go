// Package lineerr is the located problem of rtp's configuration files:
// config reports the problems of an rtp.yml and ttl those of a ttl.yml as
// *Error values (config.LineError and ttl.LineError are this type), so
// that a caller prints or sorts them alike, whichever file they come from.
package lineerr

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rtpengine/rtp/internal/yamlnode"
)

// Error is one problem of a configuration, located by file, line and key.
// Loaders return every problem of a file at once, joined with errors.Join.
// It is a comparable value, so that a loader can drop a problem found
// twice.
type Error struct {
	// File names the file: the name given to a loader or the path it
	// read; "" for a configuration built in code.
	File string
	// Line is 1-based: the line of the key, or of its closest enclosing
	// key the file sets; 0 when no line applies (a default value, or a
	// YAML error the parser did not place).
	Line int
	// Key is the key path, like "regions.default.shape.inner",
	// "verifiers[0].url" or "causes.biome"; "" for the whole file.
	Key string
	// Msg says what is wrong.
	Msg string
}

// Error formats the problem as "file:line: key: message", leaving out the
// parts that are unknown; without a file it starts with "config: ".
func (e *Error) Error() string {
	var b strings.Builder
	if e.File == "" {
		b.WriteString("config")
	} else {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Line))
		}
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Syntax turns an error of the YAML parser ("yaml: line 3: ...") into the
// problem of file it describes, at the line the parser names.
func Syntax(file string, err error) *Error {
	line, msg := yamlnode.SyntaxLine(err)
	return &Error{File: file, Line: line, Msg: "YAML syntax: " + msg}
}

// SortByLine sorts problems by line, stably, those without a line last.
func SortByLine(errs []*Error) {
	slices.SortStableFunc(errs, func(a, b *Error) int {
		return cmp.Compare(sortLine(a.Line), sortLine(b.Line))
	})
}

func sortLine(l int) int {
	if l <= 0 {
		return math.MaxInt
	}
	return l
}

// All returns the problems joined in err (errors.Join, one level; a
// single error stands for itself), each found with errors.As. ok is false
// when err is nil or one of its parts is not a problem of a configuration:
// the caller has another kind of failure on its hands (a file that could
// not be read).
func All(err error) (problems []*Error, ok bool) {
	if err == nil {
		return nil, false
	}
	parts := []error{err}
	if j, isJoin := err.(interface{ Unwrap() []error }); isJoin {
		parts = j.Unwrap()
	}
	for _, p := range parts {
		var e *Error
		if !errors.As(p, &e) {
			return nil, false
		}
		problems = append(problems, e)
	}
	return problems, len(problems) > 0
}
