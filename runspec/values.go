package runspec

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/internal/redact"
)

// valuesOf is how a flag's value is written back as arguments: one
// string per repetition of the flag. reveal says whether secrets are
// written as they are (to run) or masked (to log or store).
type valuesOf interface {
	values(reveal bool) []string
}

// flagValues is what a flag holds, one string per repetition.
func flagValues(f *pflag.Flag, reveal bool) []string {
	switch v := f.Value.(type) {
	case valuesOf:
		return v.values(reveal)
	case pflag.SliceValue:
		return v.GetSlice()
	}
	s := f.Value.String()
	if f.Value.Type() == "float64" {
		// vLLM's spelling: --request-rate inf.
		switch s {
		case "+Inf":
			s = "inf"
		case "-Inf":
			s = "-inf"
		case "NaN":
			s = "nan"
		}
	}
	return []string{s}
}

// optFloat is a float flag that may be left unset (nil): a sampling
// parameter the request then leaves to the server. Help shows no
// default, since none is sent.
type optFloat struct{ p **float64 }

func (v optFloat) String() string {
	if *v.p == nil {
		return ""
	}
	return strconv.FormatFloat(**v.p, 'g', -1, 64)
}

func (v optFloat) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return fmt.Errorf("not a number")
	}
	*v.p = &f
	return nil
}

func (optFloat) Type() string { return "float" }

// optInt is an int flag that may be left unset (nil).
type optInt struct{ p **int }

func (v optInt) String() string {
	if *v.p == nil {
		return ""
	}
	return strconv.Itoa(**v.p)
}

func (v optInt) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("not an integer")
	}
	*v.p = &n
	return nil
}

func (optInt) Type() string { return "int" }

// headersValue is --header, repeatable. Set never fails: an item that is
// not a header may be a bare credential, and pflag's error would print
// it; the validator refuses it by position instead.
type headersValue struct {
	p       *[]Header
	changed bool
}

func (v *headersValue) String() string {
	parts := make([]string, len(*v.p))
	for i, h := range *v.p {
		parts[i] = h.String()
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func (v *headersValue) Set(s string) error {
	h, _ := ParseHeader(s)
	if !v.changed {
		*v.p, v.changed = nil, true
	}
	*v.p = append(*v.p, h)
	return nil
}

func (*headersValue) Type() string { return "stringArray" }

func (v *headersValue) values(reveal bool) []string {
	out := make([]string, len(*v.p))
	for i, h := range *v.p {
		if reveal {
			out[i] = h.reveal()
		} else {
			out[i] = h.String()
		}
	}
	return out
}

// secretValue is a flag holding a Secret.
type secretValue struct{ p *Secret }

func (v secretValue) String() string { return v.p.String() }

func (v secretValue) Set(s string) error {
	*v.p = NewSecret(s)
	return nil
}

func (secretValue) Type() string { return "string" }

func (v secretValue) values(reveal bool) []string {
	if reveal {
		return []string{v.p.Reveal()}
	}
	return []string{v.p.String()}
}

// urlValue is a URL flag whose password, if any, is a secret.
type urlValue struct{ p *string }

func (v urlValue) String() string { return *v.p }

func (v urlValue) Set(s string) error {
	*v.p = s
	return nil
}

func (urlValue) Type() string { return "string" }

func (v urlValue) values(reveal bool) []string {
	if reveal {
		return []string{*v.p}
	}
	return []string{redact.URL(*v.p)}
}

// metadataValue is --metadata KEY=VALUE, repeatable; values of
// credential-named keys are secrets.
type metadataValue struct {
	p       *[]string
	changed bool
}

func (v *metadataValue) String() string {
	return "[" + strings.Join(v.values(false), ",") + "]"
}

func (v *metadataValue) Set(s string) error {
	if !v.changed {
		*v.p, v.changed = nil, true
	}
	*v.p = append(*v.p, s)
	return nil
}

func (*metadataValue) Type() string { return "stringArray" }

func (v *metadataValue) values(reveal bool) []string {
	out := make([]string, len(*v.p))
	for i, item := range *v.p {
		if reveal {
			out[i] = item
		} else {
			out[i] = maskMetadata(item)
		}
	}
	return out
}

// latencyValue is a latency flag as llm-d-inference-sim takes it: a bare
// number is milliseconds (its original form), anything else a Go duration
// such as 250us or 1.5s.
type latencyValue struct{ d *time.Duration }

func (v latencyValue) String() string {
	if v.d == nil {
		return "0"
	}
	return v.d.String()
}

func (v latencyValue) Set(s string) error {
	if ms, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
		*v.d = time.Duration(ms * float64(time.Millisecond))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is neither milliseconds (100) nor a duration (100ms)", s)
	}
	*v.d = d
	return nil
}

func (latencyValue) Type() string { return "latency" }

// namesValue is a repeatable, comma-separated list of names
// (--served-model-name a,b or a b); empty names are dropped.
type namesValue struct {
	p       *[]string
	changed bool
}

func (v *namesValue) String() string { return "[" + strings.Join(*v.p, ",") + "]" }

func (v *namesValue) Set(s string) error {
	if !v.changed {
		*v.p, v.changed = nil, true
	}
	for _, name := range strings.Split(s, ",") {
		if name = strings.TrimSpace(name); name != "" {
			*v.p = append(*v.p, name)
		}
	}
	return nil
}

func (*namesValue) Type() string { return "strings" }

func (v *namesValue) values(bool) []string { return *v.p }
