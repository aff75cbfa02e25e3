package runspec

import (
	"strings"

	"github.com/servebench/servebench/internal/option"
)

// multiValueFlags take several values after one flag, as vLLM's argparse
// nargs="+" options do: "--goodput ttft:500 tpot:50".
var multiValueFlags = map[string]bool{"--goodput": true, "--metadata": true, "--header": true, "--served-model-name": true}

// CLIArgs rewrites vLLM's argument forms that pflag cannot parse as they
// are: multi-value flags and the single-dash -tp/-pp.
func CLIArgs(args []string) []string { return VLLMArgs(ExpandMultiValueFlags(args)) }

// ExpandMultiValueFlags rewrites "--goodput a b" into "--goodput a
// --goodput b" so commands copied from vLLM's documentation run unchanged.
func ExpandMultiValueFlags(args []string) []string {
	out := make([]string, 0, len(args))
	current := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if strings.HasPrefix(a, "-") {
			current = ""
			if multiValueFlags[a] {
				current = a
				out = append(out, a)
				if i+1 < len(args) {
					out = append(out, args[i+1])
					i++
				}
				continue
			}
			out = append(out, a)
			continue
		}
		if current != "" {
			out = append(out, current, a)
			continue
		}
		out = append(out, a)
	}
	return out
}

// VLLMArgs rewrites vLLM's two-letter single-dash flags (-tp 2, -pp=2) into
// long flags pflag understands.
func VLLMArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		for _, short := range []string{"-tp", "-pp"} {
			if a == short || strings.HasPrefix(a, short+"=") {
				a = "-" + a
				break
			}
		}
		out = append(out, a)
	}
	return out
}

// FlagFor spells a library's option name (vLLM's argument name, e.g.
// random_input_len) as this CLI's flag.
func FlagFor(name string) string { return "--" + flagName(name) }

// flagNamedError is a library error as the CLI prints it: option names
// spelled as flags, with the original error still unwrappable.
type flagNamedError struct {
	err error
	msg string
}

func (e *flagNamedError) Error() string { return e.msg }
func (e *flagNamedError) Unwrap() error { return e.err }

// FlagNames rewrites the option names in err's message as flags
// (random_input_len becomes --random-input-len), so a run's error names
// what its user typed.
func FlagNames(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	changed := false
	for _, oe := range optionErrors(err, nil) {
		bare, flagged := oe.Error(), oe.Render(FlagFor)
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
