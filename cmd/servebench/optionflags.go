package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/internal/option"
)

// flagFor spells a library's option name (vLLM's argument name, e.g.
// random_input_len) as this CLI's flag. Every name the libraries use maps
// mechanically; TestOptionNamesAreFlags keeps it so.
func flagFor(name string) string { return "--" + strings.ReplaceAll(name, "_", "-") }

// flagNamedError is a library error as the CLI prints it: option names
// spelled as flags, with the original error still unwrappable.
type flagNamedError struct {
	err error
	msg string
}

func (e *flagNamedError) Error() string { return e.msg }
func (e *flagNamedError) Unwrap() error { return e.err }

// withFlagNames rewrites the option names in err's message as flags.
func withFlagNames(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	changed := false
	for _, oe := range optionErrors(err, nil) {
		bare, flagged := oe.Error(), oe.Render(flagFor)
		if bare != flagged && strings.Contains(msg, bare) {
			msg, changed = strings.Replace(msg, bare, flagged, 1), true
		}
	}
	if !changed {
		return err
	}
	return &flagNamedError{err: err, msg: msg}
}

// optionErrors collects every *option.Error in err's tree, outermost first.
func optionErrors(err error, found []*option.Error) []*option.Error {
	if oe, ok := err.(*option.Error); ok {
		found = append(found, oe)
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			found = optionErrors(inner, found)
		}
	case interface{ Unwrap() []error }:
		for _, inner := range u.Unwrap() {
			found = optionErrors(inner, found)
		}
	}
	return found
}

// speakFlags makes every command in the tree return errors with flag names.
func speakFlags(cmd *cobra.Command) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error { return withFlagNames(run(c, args)) }
	}
	for _, sub := range cmd.Commands() {
		speakFlags(sub)
	}
}
