// Package option lets a library name the option a bad value came from
// without knowing how a command line spells it.
//
// A message names options as {name} placeholders in its format string,
// with vLLM's argument names (random_input_len, request_rate). Error()
// prints the bare names, as a library user sets them; the CLI renders the
// same error with its own flag spellings (--random-input-len). Only the
// format is rewritten, never the values formatted into it, so a path or a
// server reply that happens to contain braces is printed as it is.
package option

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Error is a message about one or more options.
type Error struct {
	format string
	args   []any
	err    error // the message with bare names, which also wraps any %w argument
	cause  error // set by WithCause: unwrapped, but not part of the message
}

// Errorf formats like fmt.Errorf (including %w), with {name} placeholders
// in format for option names.
func Errorf(format string, args ...any) *Error {
	return &Error{format: format, args: args, err: fmt.Errorf(render(format, bareName), args...)}
}

// New is an Error whose text, apart from its {name} placeholders, is
// printed as it is.
func New(text string) *Error { return Errorf(escapePercent(text)) }

func (e *Error) Error() string { return e.err.Error() }

// WithCause keeps cause reachable through errors.Is and errors.As without
// printing it, for a message written for the user about a lower-level error.
func (e *Error) WithCause(cause error) *Error {
	e.cause = cause
	return e
}

func (e *Error) Unwrap() error {
	if e.cause != nil {
		return e.cause
	}
	return errors.Unwrap(e.err)
}

// Render is the message with each option name spelled by spell, e.g. the
// CLI's flag for it.
func (e *Error) Render(spell func(name string) string) string {
	return fmt.Errorf(render(e.format, spell), e.args...).Error()
}

var placeholder = regexp.MustCompile(`\{([a-z][a-z0-9_]*)\}`)

func render(format string, spell func(string) string) string {
	return placeholder.ReplaceAllStringFunc(format, func(m string) string {
		return escapePercent(spell(m[1 : len(m)-1]))
	})
}

func bareName(name string) string { return name }

func escapePercent(s string) string { return strings.ReplaceAll(s, "%", "%%") }
